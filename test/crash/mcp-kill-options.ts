/** The MCP servers of the SIGKILL test's engines (the child's and the one that recovers): one trusted HTTP server, no approvals. */
import type { EngineOptions } from '../../src'

export function mcpServersFor(url: string): NonNullable<EngineOptions['mcp']> {
  return { servers: { site: { transport: { type: 'http', url, headers: { Authorization: 'Bearer tc-mcp-kill-token-0123456789' } }, trust: true, approval: 'never', reconnect: { attempts: 2, initialDelayMs: 20 } } } }
}
