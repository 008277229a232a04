/**
 * A child engine with one turn per tool named on the command line, each calling that tool of an
 * MCP server (Streamable HTTP, the test's, which holds the calls): the test SIGKILLs this
 * process once every call has reached the server.
 * Usage: node mcp-kill-child.js <db> <baseURL> <mcpUrl> <tool>...
 */
import { createOpenAICompatible } from '@ai-sdk/openai-compatible'
import { createEngine } from '../../src'
import { mcpServersFor } from './mcp-kill-options'

async function main() {
  const [database, baseURL, mcpUrl, ...tools] = process.argv.slice(2)
  const model = createOpenAICompatible({ name: 'scripted', baseURL, apiKey: 'k', includeUsage: true })('m')
  const engine = await createEngine({ database, model, recovery: { onOpen: false, intervalMs: 0 }, mcp: mcpServersFor(mcpUrl) })
  for (const tool of tools) {
    const session = await engine.createSession({ title: tool })
    process.send?.({ type: 'session', sessionId: session.id, to: tool })
    engine.prompt(session.id, `call ${tool}`)
  }
}

if (require.main === module) void main()
