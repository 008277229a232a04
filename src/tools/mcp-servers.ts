/**
 * The engine's MCP servers (`createEngine({ mcp: { servers } })`): each connected at
 * `createEngine`, its tools listed once and declared as AI SDK tools whose `execute` goes through
 * the server's `McpConnection` (reconnects, calls in doubt, tools that changed). What each tool
 * gets from its annotations is decided here, once: approval and idempotency (hints relax nothing
 * unless the app trusts the server).
 */
import { dynamicTool, jsonSchema, type ToolSet } from 'ai'
import { InvalidOptionError } from '../core/errors'
import type { McpOptions, McpServerOptions, McpToolInfo } from './mcp-options'
import { McpConnection, mcpLoader, type McpCallOptions, type McpToolDefinition } from './mcp-connection'
import { configureTool } from './tool-options'

export interface McpServers {
  /** Every server's tools, by their name in the engine (`prefix` + the server's name). */
  tools: ToolSet
  /** Header and env values of the transports: the engine's redactor removes them from anything stored or published. */
  secrets: string[]
  close(): Promise<void>
}

/**
 * Connects every server and makes its tools. Rejects with `McpServerUnavailableError` when a
 * server cannot be reached (after its reconnect attempts), `InvalidOptionError` when two tools
 * would have one name or `@ai-sdk/mcp` is not installed.
 *
 * @example
 * const mcp = await openMcpServers({ servers: { docs: { transport: { type: 'http', url } } } })
 */
export async function openMcpServers(options: McpOptions, taken: readonly string[]): Promise<McpServers> {
  const entries = Object.entries(options.servers)
  // A missing @ai-sdk/mcp fails here, saying what to install (not as a server out of reach).
  mcpLoader.load()
  if (entries.some(([, server]) => server.transport.type === 'stdio')) mcpLoader.loadStdio()
  const connections = entries.map(([name, server]) => new McpConnection(name, server))
  const close = () => Promise.all(connections.map((c) => c.close())).then(() => undefined)
  try {
    const opened = await Promise.all(connections.map((c) => c.open()))
    const tools: ToolSet = {}
    const names = new Set(taken)
    entries.forEach(([server, serverOptions], i) => {
      for (const definition of opened[i].definitions) {
        if (serverOptions.tools && !serverOptions.tools.includes(definition.name)) continue
        const name = `${serverOptions.prefix ?? ''}${definition.name}`
        if (names.has(name)) throw new InvalidOptionError(`mcp.servers.${server}`, name, `tool names unique across tools and MCP servers (give the server a prefix)`)
        names.add(name)
        tools[name] = mcpTool(connections[i], serverOptions, definition, opened[i].tools[definition.name]?.toModelOutput)
      }
    })
    return { tools, secrets: entries.flatMap(([, server]) => transportSecrets(server)), close }
  } catch (error) {
    await close()
    throw error
  }
}

/** What a tool's annotations get it: approval and idempotency, hints trusted only on a trusted server. */
export function mcpToolPolicy(server: string, options: McpServerOptions, definition: McpToolDefinition): { needsApproval: boolean; idempotent: boolean } {
  const annotations = definition.annotations ?? {}
  const info: McpToolInfo = { server, name: definition.name, annotations: { ...annotations } }
  const trusted = options.trust === true
  // The spec's defaults: readOnlyHint false, destructiveHint true, idempotentHint false.
  const harmless = trusted && (annotations.readOnlyHint === true || annotations.destructiveHint === false)
  const approval = options.approval ?? 'destructive'
  const needsApproval = typeof approval === 'function' ? approval(info) === true : approval === 'always' ? true : approval === 'never' ? false : !harmless
  const declared = options.idempotent === true || (Array.isArray(options.idempotent) && options.idempotent.includes(definition.name))
  const idempotent = declared || (trusted && (annotations.readOnlyHint === true || annotations.idempotentHint === true))
  return { needsApproval, idempotent }
}

function mcpTool(connection: McpConnection, options: McpServerOptions, definition: McpToolDefinition, toModelOutput: unknown): ToolSet[string] {
  const { needsApproval, idempotent } = mcpToolPolicy(connection.server, options, definition)
  const tool = dynamicTool({
    description: definition.description ?? definition.title ?? definition.name,
    inputSchema: jsonSchema({ ...definition.inputSchema, properties: definition.inputSchema.properties ?? {}, additionalProperties: false } as Parameters<typeof jsonSchema>[0] & object),
    execute: (input, callOptions) => connection.call(definition.name, input, callOptions as McpCallOptions, idempotent),
    ...(typeof toModelOutput === 'function' ? { toModelOutput: toModelOutput as never } : {}),
  })
  return configureTool({ ...tool, needsApproval } as ToolSet[string], { idempotent, ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}) })
}

function transportSecrets(server: McpServerOptions): string[] {
  const transport = server.transport
  const values = transport.type === 'http' ? Object.values(transport.headers ?? {}) : Object.values(transport.env ?? {})
  // A header's value and, for `Bearer <token>`, the token alone (an error may quote either).
  return values.flatMap((value) => [value, ...value.split(/\s+/).slice(1)]).filter((value) => value.length >= 8)
}
