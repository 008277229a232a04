/**
 * The fingerprint of the tools a turn can call: each tool's name and the digest of what the
 * model is told about its input (its JSON Schema; a provider tool's id and args). A turn stores
 * it when it starts (`StoredTurnOptions.toolFingerprint`, in the turn's options), so a deploy
 * can ask which open turns its new tool set would break and a resumed turn can say which tool
 * changed instead of calling an unknown one (src/tools/run-tools.ts). Any tool source (the
 * app's `tools`, MCP servers' tools) joins by being in the `ToolSet` passed here: a fingerprint
 * is a function of the tool set alone.
 *
 * Digests are hex SHA-256 of canonical JSON (object keys sorted), so a schema rebuilt with its
 * keys in another order is the same schema.
 */
import { asSchema, type ToolSet } from 'ai'
import { canonicalJson, sha256Hex } from '../core/input-digest'

/** Tool name → hex SHA-256 of its input schema's canonical JSON. */
export type ToolFingerprint = Record<string, string>

/** How a stored tool differs from the engine's tool of that name. */
export type ToolChange = 'removed' | 'schema-changed'

export interface ToolDifference {
  tool: string
  change: ToolChange
}

/** Hex SHA-256 of `value`'s canonical JSON. */
export function digestJson(value: unknown): string {
  return sha256Hex(canonicalJson(value ?? null))
}

/**
 * The digest of one tool: its input's JSON Schema (a function or dynamic tool, MCP tools
 * included), or its provider id and args (a provider-defined tool). Rejects when the schema
 * cannot be converted, as the model call would.
 */
export async function toolDigest(tool: ToolSet[string]): Promise<string> {
  const t = tool as { type?: string; id?: unknown; args?: unknown; inputSchema?: unknown }
  if (t.type === 'provider') return digestJson({ provider: t.id, args: t.args ?? null })
  const schema = await asSchema(t.inputSchema as Parameters<typeof asSchema>[0]).jsonSchema
  return digestJson(schema)
}

/**
 * The fingerprint of a tool set. A schema that cannot be converted gets the digest of its
 * error (its calls fail at the model call, as without a fingerprint).
 *
 * @example
 * const fp = await toolFingerprint({ weather: tool({ inputSchema: z.object({ city: z.string() }), execute }) })
 * // { weather: '3f1c…' }
 */
export async function toolFingerprint(tools: ToolSet | undefined): Promise<ToolFingerprint> {
  const out: ToolFingerprint = {}
  for (const [name, tool] of Object.entries(tools ?? {})) {
    out[name] = await toolDigest(tool).catch((error: unknown) => digestJson({ unconvertible: error instanceof Error ? error.message : String(error) }))
  }
  return out
}

/**
 * The fingerprint restricted to `names` (a turn that may call some of the engine's tools;
 * `undefined`: all of them).
 *
 * @example
 * pickTools(engineFingerprint, ['read']) // { read: '3f1c…' }
 */
export function pickTools(fingerprint: ToolFingerprint, names: readonly string[] | undefined): ToolFingerprint {
  if (!names) return { ...fingerprint }
  const picked: ToolFingerprint = {}
  for (const name of names) if (Object.hasOwn(fingerprint, name)) picked[name] = fingerprint[name]
  return picked
}

/**
 * How `tool` changed between the stored fingerprint and the current one: `undefined` when it
 * did not, or when the turn stored no such tool (a turn of a version before fingerprints, or a
 * tool the model made up: those are told apart elsewhere).
 *
 * @example
 * toolChange(stored, current, 'deploy') // 'removed'
 */
export function toolChange(stored: ToolFingerprint | undefined, current: ToolFingerprint, tool: string): ToolChange | undefined {
  if (!stored || !Object.hasOwn(stored, tool)) return undefined
  if (!Object.hasOwn(current, tool)) return 'removed'
  return stored[tool] === current[tool] ? undefined : 'schema-changed'
}

/**
 * The stored tools that `current` lacks or describes differently, in the stored order. A tool
 * `current` adds breaks nothing, so it is not listed.
 *
 * @example
 * fingerprintChanges({ a: 'x', b: 'y' }, { a: 'z' }) // [{ tool: 'a', change: 'schema-changed' }, { tool: 'b', change: 'removed' }]
 */
export function fingerprintChanges(stored: ToolFingerprint, current: ToolFingerprint): ToolDifference[] {
  const out: ToolDifference[] = []
  for (const tool of Object.keys(stored)) {
    const change = toolChange(stored, current, tool)
    if (change) out.push({ tool, change })
  }
  return out
}

/** The error of a call whose tool changed since its turn started (what the model and the user see), naming the tool and the change. */
export function toolChangedMessage(tool: string, change: ToolChange): string {
  return change === 'removed'
    ? `tool '${tool}' is no longer available (removed): it was removed after this turn started; the call was not run`
    : `tool '${tool}' changed after this turn started (schema-changed): its input schema is not the one the model was given; the call was not run`
}
