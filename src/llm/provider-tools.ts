/**
 * The user's `ToolSet` → the tools a model's `doStream` takes (the provider's function-tool
 * shape, the same in V3 and V4), computed once per tool set. JSON schemas come from the AI
 * SDK's public `asSchema` (zod, Standard Schema or `jsonSchema()`), so tools made by either
 * major's `tool()` work.
 */
import { asSchema, type ToolSet } from 'ai'

export type ToolSchema = ReturnType<typeof asSchema>

/** A tool as `doStream` takes it. */
export type ProviderTool =
  | {
      type: 'function'
      name: string
      description?: string
      inputSchema: unknown
      inputExamples?: unknown
      strict?: boolean
      providerOptions?: unknown
    }
  | { type: 'provider'; name: string; id: string; args: unknown }

export interface PreparedTools {
  /** `tools` and `toolChoice` for `doStream` (rejects when a schema cannot be converted). */
  call: Promise<{ tools: ProviderTool[] | undefined; toolChoice: { type: 'auto' } | undefined }>
  /** Input schemas by tool name, for validating a call's input. */
  schemas: Map<string, ToolSchema>
}

const cache = new WeakMap<ToolSet, PreparedTools>()

/**
 * The provider tools and input schemas of a tool set (cached by identity).
 *
 * @example
 * const { tools, toolChoice } = await prepareTools(config.tools).call
 */
export function prepareTools(tools: ToolSet): PreparedTools {
  let value = cache.get(tools)
  if (!value) {
    const schemas = new Map<string, ToolSchema>()
    for (const [name, t] of Object.entries(tools)) {
      if ((t as { type?: string }).type !== 'provider') schemas.set(name, asSchema(t.inputSchema))
    }
    const call = providerTools(tools, schemas)
    call.catch(() => {}) // a schema that cannot be converted fails the call that awaits it, not the process
    value = { call, schemas }
    cache.set(tools, value)
  }
  return value
}

async function providerTools(tools: ToolSet, schemas: Map<string, ToolSchema>): Promise<Awaited<PreparedTools['call']>> {
  const entries = Object.entries(tools)
  if (entries.length === 0) return { tools: undefined, toolChoice: undefined }
  const out: ProviderTool[] = []
  for (const [name, t] of entries) {
    const tool = t as { type?: string; description?: string; inputExamples?: unknown; strict?: boolean; providerOptions?: unknown; id?: string; args?: unknown }
    if (tool.type === 'provider') {
      out.push({ type: 'provider', name, id: tool.id as string, args: tool.args })
      continue
    }
    out.push({
      type: 'function',
      name,
      description: tool.description,
      inputSchema: await schemas.get(name)!.jsonSchema,
      ...(tool.inputExamples != null ? { inputExamples: tool.inputExamples } : {}),
      ...(tool.providerOptions != null ? { providerOptions: tool.providerOptions } : {}),
      ...(tool.strict != null ? { strict: tool.strict } : {}),
    })
  }
  return { tools: out, toolChoice: { type: 'auto' } }
}
