/**
 * The MCP servers of the SIGKILL test's engines (the child's and the one that recovers): one
 * trusted HTTP server, no approvals; `slow_copy` (no annotations) idempotent by the app's word.
 */
import type { EngineOptions } from '../../src'

export function mcpServersFor(url: string): NonNullable<EngineOptions['mcp']> {
  return {
    servers: {
      site: {
        transport: { type: 'http', url, headers: { Authorization: 'Bearer tc-mcp-kill-token-0123456789' } },
        trust: true,
        approval: 'never',
        idempotent: ['slow_copy'],
        reconnect: { attempts: 2, initialDelayMs: 20 },
      },
    },
  }
}
