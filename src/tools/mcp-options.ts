/**
 * The engine's `mcp` option: MCP servers whose tools the engine owns (it connects, lists their
 * tools at `createEngine`, reconnects, and knows when a call's connection dropped). Types only.
 */

/** Streamable HTTP. `headers` (tokens) are sent to the server only: never stored, logged or published. */
export interface McpHttpTransport {
  type: 'http'
  url: string
  headers?: Record<string, string>
}

/** A server run as a child process speaking MCP on its stdin/stdout. `env` values are passed to it only. */
export interface McpStdioTransport {
  type: 'stdio'
  command: string
  args?: string[]
  env?: Record<string, string>
  cwd?: string
}

/** What a server says about one of its tools (its MCP annotations, as the server sent them). */
export interface McpToolInfo {
  server: string
  /** The tool's name on the server (without `prefix`). */
  name: string
  annotations: { readOnlyHint?: boolean; destructiveHint?: boolean; idempotentHint?: boolean; openWorldHint?: boolean; title?: string }
}

export interface McpServerOptions {
  transport: McpHttpTransport | McpStdioTransport
  /**
   * The app trusts this server's annotations (default false: hints are the server's claims).
   * Trusted: a tool with `readOnlyHint: true` or `idempotentHint: true` is idempotent (re-run
   * after a crash or a dropped connection), and `approval: 'destructive'` lets a tool with
   * `readOnlyHint: true` or `destructiveHint: false` run without approval.
   */
  trust?: boolean
  /**
   * Which tools need approval: `'destructive'` (default: every tool not known to be harmless,
   * so on an untrusted server every tool, and on a trusted one each tool unless it says
   * `readOnlyHint: true` or `destructiveHint: false`; the spec's `destructiveHint` defaults to
   * true, so a tool without annotations needs approval), `'always'`, `'never'`, or a function.
   */
  approval?: 'destructive' | 'always' | 'never' | ((tool: McpToolInfo) => boolean)
  /** Tools the app declares idempotent (`true`: all of this server's): re-run after a crash or a dropped connection whatever the hints say. */
  idempotent?: boolean | readonly string[]
  /** Only these tools of the server (default all). */
  tools?: readonly string[]
  /** Prepended to each tool's name in the engine (`'github_'`): two servers' tools cannot collide. */
  prefix?: string
  /** Each call's timeout (default `toolExecution.timeoutMs`). A server that stops answering mid-call ends the call then. */
  timeoutMs?: number
  /** Each connection attempt's limit (default 10 000 ms). */
  connectTimeoutMs?: number
  /** Reconnecting: attempts per connection (default 3), with backoff from `initialDelayMs` (200) doubling to `maxDelayMs` (2 000). */
  reconnect?: { attempts?: number; initialDelayMs?: number; maxDelayMs?: number }
}

/** `createEngine({ mcp: { servers: { name: options } } })`. */
export interface McpOptions {
  servers: Record<string, McpServerOptions>
}
