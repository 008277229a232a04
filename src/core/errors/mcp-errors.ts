/** Errors of MCP servers' tools (the engine's `mcp` option): a server out of reach, a tool that answered with an error. */
import { TurnchartError, isNamed } from './turnchart-error'

/**
 * An MCP server could not be reached: at `createEngine` (the engine does not start without its
 * tools), or before a call, after `attempts` connection attempts with backoff. A call that meets
 * it was never sent: the model sees this error as the call's result, and the turn goes on.
 * `server` is the name under `mcp.servers`; the message has no header or token.
 */
export class McpServerUnavailableError extends TurnchartError {
  readonly name = 'McpServerUnavailableError'
  readonly server: string
  readonly attempts: number
  constructor(server: string, attempts: number, cause: unknown) {
    const why = cause instanceof Error ? cause.message : String(cause)
    super(`MCP server '${server}' is unavailable after ${attempts} connection attempt${attempts === 1 ? '' : 's'}: ${why}`, { cause })
    this.server = server
    this.attempts = attempts
  }
  static isInstance = isNamed<McpServerUnavailableError>('McpServerUnavailableError')
}

/** An MCP tool's result had `isError: true`: the call is an error part with the server's text. */
export class McpToolError extends TurnchartError {
  readonly name = 'McpToolError'
  readonly server: string | undefined
  readonly tool: string
  constructor(tool: string, text: string, server?: string) {
    super(text || `MCP tool '${tool}' returned an error`)
    this.tool = tool
    this.server = server
  }
  static isInstance = isNamed<McpToolError>('McpToolError')
}
