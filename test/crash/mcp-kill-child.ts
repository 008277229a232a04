/**
 * A child engine whose turn calls one tool of an MCP server (Streamable HTTP, the test's): the
 * test SIGKILLs this process while the server holds the call.
 * Usage: node mcp-kill-child.js <db> <baseURL> <mcpUrl> <tool>
 */
import { createOpenAICompatible } from '@ai-sdk/openai-compatible'
import { createEngine } from '../../src'
import { mcpServersFor } from './mcp-kill-options'

async function main() {
  const [database, baseURL, mcpUrl] = process.argv.slice(2)
  const model = createOpenAICompatible({ name: 'scripted', baseURL, apiKey: 'k', includeUsage: true })('m')
  const engine = await createEngine({ database, model, recovery: { onOpen: false, intervalMs: 0 }, mcp: mcpServersFor(mcpUrl) })
  const session = await engine.createSession()
  process.send?.({ type: 'session', sessionId: session.id })
  engine.prompt(session.id, 'call it')
}

if (require.main === module) void main()
