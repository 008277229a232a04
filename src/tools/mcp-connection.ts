/**
 * One MCP server's connection, owned by the engine: connected with bounded retries and backoff,
 * connected again before the next call once it dropped, and the one place that knows what a
 * failed call means. A call that could not be sent (the server is down) may be sent again
 * after a reconnect; a call whose connection dropped after it was sent has an unknown outcome:
 * re-sent only when the tool is idempotent, otherwise thrown as `CallOutcomeUnknownError` (the
 * call is in doubt). `@ai-sdk/mcp` is loaded here only, when the engine has MCP servers.
 */
import { CallOutcomeUnknownError, InvalidOptionError, McpServerUnavailableError, McpToolError } from '../core/errors'
import type { McpServerOptions } from './mcp-options'
import { digestJson, toolChangedMessage } from './tool-fingerprint'
import { throwIfMcpError } from './mcp-result'

/** A tool as the server lists it (`tools/list`). */
export interface McpToolDefinition {
  name: string
  description?: string
  title?: string
  inputSchema: { type: 'object'; properties?: Record<string, unknown>; [key: string]: unknown }
  annotations?: { readOnlyHint?: boolean; destructiveHint?: boolean; idempotentHint?: boolean; openWorldHint?: boolean; title?: string }
  _meta?: unknown
}

/** What turnchart uses of `@ai-sdk/mcp`'s client. */
interface McpClientLike {
  listTools(options?: { params?: { cursor?: string } }): Promise<{ tools: McpToolDefinition[]; nextCursor?: string }>
  toolsFromDefinitions(definitions: { tools: McpToolDefinition[] }): Record<string, { execute: (input: unknown, options: unknown) => Promise<unknown>; toModelOutput?: unknown }>
  close(): Promise<void>
}

interface McpModule {
  createMCPClient(config: { transport: unknown; onUncaughtError?: (error: unknown) => void; initializationOptions?: { timeout?: number }; clientName?: string }): Promise<McpClientLike>
}

interface McpStdioModule {
  Experimental_StdioMCPTransport: new (config: { command: string; args?: string[]; env?: Record<string, string>; cwd?: string }) => unknown
}

/** `@ai-sdk/mcp` (an optional peer dependency), loaded only when the engine has MCP servers. Exported for tests. */
export const mcpLoader = {
  /** Node's `require` (replaced in tests to simulate the package missing). */
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  require: (id: string): unknown => require(id),
  load(): McpModule {
    try {
      return this.require('@ai-sdk/mcp') as McpModule
    } catch (error) {
      throw new InvalidOptionError('mcp', '(MCP servers)', `the package @ai-sdk/mcp installed beside turnchart (npm install @ai-sdk/mcp; 1.x with ai 6, 2.x with ai 7): ${error instanceof Error ? error.message : String(error)}`)
    }
  },
  loadStdio(): McpStdioModule {
    this.load()
    return this.require('@ai-sdk/mcp/mcp-stdio') as McpStdioModule
  },
}

/** Network errors of a request that never reached the server: sending it again is safe. */
const notSentCodes = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT'])
const notSentMessages = ['Attempted to send a request from a closed client', 'StdioClientTransport not connected']

/** What a failed call means: the server answered (an error it gave), the request never left, or nobody knows. */
type Failure = 'answered' | 'not-sent' | 'unknown'

/** The rejection of a call in flight on a connection that dropped (whatever dropped it). */
class ConnectionDropped extends Error {
  readonly dropped = true
  constructor(cause: unknown) {
    super(`the connection dropped: ${cause instanceof Error ? cause.message : String(cause)}`, { cause })
  }
}

function classify(error: unknown): Failure {
  if (error instanceof ConnectionDropped) return 'unknown' // sent on a connection that is gone
  const e = error as { code?: unknown; statusCode?: unknown; message?: unknown; cause?: { code?: unknown; cause?: { code?: unknown } } } | null
  if (typeof e?.code === 'number' || typeof e?.statusCode === 'number') return 'answered' // a JSON-RPC error or an HTTP status: the server (or its proxy) answered
  const code = e?.cause?.code ?? e?.cause?.cause?.code ?? e?.code
  if (typeof code === 'string' && notSentCodes.has(code)) return 'not-sent'
  if (typeof e?.message === 'string' && notSentMessages.some((m) => (e.message as string).includes(m))) return 'not-sent'
  if (typeof e?.message === 'string' && e.message.includes('Failed to parse server response')) return 'answered' // it answered, badly
  return 'unknown'
}

/**
 * The server says it has no such tool: a JSON-RPC error (invalid params, method not found), or
 * the `isError` result the SDK's servers give ("MCP error -32602: Tool x not found").
 */
function saysUnknownTool(error: unknown, name: string): boolean {
  const message = (error as { message?: unknown } | null)?.message
  return typeof message === 'string' && (message.includes(`Tool ${name} not found`) || /-3260[12]/.test(message) || (error as { code?: unknown }).code === -32601 || ((error as { code?: unknown }).code === -32602 && /not found|unknown tool/i.test(message)))
}

/** The options a call's `execute` gets (the AI SDK's). */
export interface McpCallOptions {
  toolCallId: string
  abortSignal?: AbortSignal
  messages?: unknown
}

interface Connected {
  client: McpClientLike
  tools: ReturnType<McpClientLike['toolsFromDefinitions']>
  definitions: McpToolDefinition[]
  /** Digest of each listed tool's input schema. */
  digests: Map<string, string>
  dropped: boolean
  /** Rejecters of the calls in flight on this connection. */
  calls: Set<(error: unknown) => void>
}

export class McpConnection {
  private current: Connected | undefined
  private connecting: Promise<Connected> | undefined
  private closed = false
  /** The digests of the tools as first listed (what the engine declared to the model). */
  private readonly pinned = new Map<string, string>()
  readonly attempts: number

  constructor(
    readonly server: string,
    private readonly options: McpServerOptions,
  ) {
    this.attempts = options.reconnect?.attempts ?? 3
  }

  /** Connects (with retries) and lists the server's tools: what the engine declares to the model. */
  async open(): Promise<{ definitions: McpToolDefinition[]; tools: Connected['tools'] }> {
    const connected = await this.connect()
    for (const [name, digest] of connected.digests) this.pinned.set(name, digest)
    return { definitions: connected.definitions, tools: connected.tools }
  }

  /**
   * Calls `name` with `input`. Resolves with the server's result; throws `McpToolError` for an
   * `isError` result, `McpServerUnavailableError` when the call could not be sent after the
   * reconnect attempts, `CallOutcomeUnknownError` when the connection dropped after it was
   * sent (re-sent instead, after a reconnect, when `idempotent`), and an error naming the tool
   * when the server, connected again, no longer lists it or changed its input schema.
   */
  async call(name: string, input: unknown, options: McpCallOptions, idempotent: boolean): Promise<unknown> {
    let lastError: unknown
    for (let attempt = 1; attempt <= this.attempts; attempt++) {
      const connected = await this.connect()
      const now = connected.digests.get(name)
      if (now === undefined) throw new Error(`${toolChangedMessage(name, 'removed')} (MCP server '${this.server}' no longer lists it)`)
      if (this.pinned.has(name) && now !== this.pinned.get(name)) throw new Error(`${toolChangedMessage(name, 'schema-changed')} (MCP server '${this.server}')`)
      let reject!: (error: unknown) => void
      const dropped = new Promise<never>((_, rejectCall) => (reject = rejectCall))
      dropped.catch(() => undefined)
      connected.calls.add(reject)
      try {
        const result = await Promise.race([connected.tools[name].execute(input, options), dropped])
        throwIfMcpError(name, result, this.server)
        return result
      } catch (error) {
        if (options.abortSignal?.aborted) throw error // the turn's abort or the tool's timeout: run-tools says which
        const failure = McpToolError.isInstance(error) ? 'answered' : classify(error)
        if (failure === 'answered' && saysUnknownTool(error, name)) {
          // The server does not know the tool (its tools changed without the connection dropping): listed again, named.
          this.discard(connected, error)
          const relisted = await this.connect().catch(() => undefined)
          if (relisted && !relisted.digests.has(name)) throw new Error(`${toolChangedMessage(name, 'removed')} (MCP server '${this.server}' no longer lists it)`)
        }
        if (failure === 'answered') throw error // the server answered: an error it gave (an isError result included)
        lastError = error
        this.discard(connected, error) // connected again before the next request
        if (failure === 'not-sent') continue // never reached the server: safe to send again
        if (idempotent) continue // the outcome is unknown, and running it again is safe
        throw new CallOutcomeUnknownError({
          callId: options.toolCallId,
          toolName: name,
          cause: error,
          message: `the connection to MCP server '${this.server}' dropped during the call (${error instanceof Error ? error.message : String(error)})`,
        })
      } finally {
        connected.calls.delete(reject)
      }
    }
    throw new McpServerUnavailableError(this.server, this.attempts, lastError)
  }

  async close(): Promise<void> {
    this.closed = true
    const current = this.current
    this.current = undefined
    if (current) await current.client.close().catch(() => undefined)
  }

  /** The live connection, or a new one (bounded attempts with backoff; one at a time). */
  private connect(): Promise<Connected> {
    if (this.current && !this.current.dropped) return Promise.resolve(this.current)
    if (this.closed) return Promise.reject(new McpServerUnavailableError(this.server, 0, new Error('the engine is closed')))
    this.connecting ??= this.connectWithRetries().finally(() => (this.connecting = undefined))
    return this.connecting
  }

  private async connectWithRetries(): Promise<Connected> {
    const { initialDelayMs = 200, maxDelayMs = 2000 } = this.options.reconnect ?? {}
    let lastError: unknown
    for (let attempt = 1; attempt <= this.attempts; attempt++) {
      if (attempt > 1) await new Promise((resolve) => setTimeout(resolve, Math.min(maxDelayMs, initialDelayMs * 2 ** (attempt - 2))))
      try {
        this.current = await this.connectOnce()
        return this.current
      } catch (error) {
        lastError = error
      }
    }
    throw new McpServerUnavailableError(this.server, this.attempts, lastError)
  }

  private async connectOnce(): Promise<Connected> {
    const { createMCPClient } = mcpLoader.load()
    const transport = this.options.transport
    const connected: Connected = { client: undefined as unknown as McpClientLike, tools: {}, definitions: [], digests: new Map(), dropped: false, calls: new Set() }
    const client = await createMCPClient({
      transport:
        transport.type === 'stdio'
          ? new (mcpLoader.loadStdio().Experimental_StdioMCPTransport)({
              command: transport.command,
              ...(transport.args ? { args: [...transport.args] } : {}),
              ...(transport.env ? { env: { ...transport.env } } : {}),
              ...(transport.cwd ? { cwd: transport.cwd } : {}),
            })
          : { type: 'http', url: transport.url, ...(transport.headers ? { headers: { ...transport.headers } } : {}) },
      initializationOptions: { timeout: this.options.connectTimeoutMs ?? 10_000 },
      clientName: 'turnchart',
      // A transport's failure (a response stream cut mid-call, the process gone): the calls in
      // flight on it have an unknown outcome, and the next call connects again. (Without this,
      // `@ai-sdk/mcp` leaves a call whose response stream died waiting forever.)
      onUncaughtError: (error) => {
        if (classify(error) !== 'answered') this.discard(connected, error)
      },
    })
    connected.client = client
    try {
      connected.definitions = await listAll(client)
    } catch (error) {
      await client.close().catch(() => undefined)
      throw error
    }
    connected.tools = client.toolsFromDefinitions({ tools: connected.definitions })
    connected.digests = new Map(connected.definitions.map((d) => [d.name, digestJson(d.inputSchema)]))
    return connected
  }

  /** Drops a connection: its calls in flight fail (their outcome unknown), and it is closed. */
  private discard(connected: Connected, error: unknown): void {
    if (connected.dropped) return
    connected.dropped = true
    if (this.current === connected) this.current = undefined
    for (const reject of [...connected.calls]) reject(new ConnectionDropped(error))
    void connected.client?.close().catch(() => undefined)
  }
}

async function listAll(client: McpClientLike): Promise<McpToolDefinition[]> {
  const definitions: McpToolDefinition[] = []
  let cursor: string | undefined
  do {
    const page = await client.listTools(cursor ? { params: { cursor } } : undefined)
    definitions.push(...page.tools)
    cursor = page.nextCursor
  } while (cursor)
  return definitions
}
