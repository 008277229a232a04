/**
 * A child process that opens an engine on a database (recovering on open) and reports whether
 * it took over a turn of `sessionId`, then waits for that turn to end.
 * Usage: node -r ts-node/register/transpile-only recover-child.ts <db> <baseURL> <sessionId>
 */
import { createOpenAICompatible } from '@ai-sdk/openai-compatible'
import { createEngine } from '../../src'
import { childTools } from './child-tools'

async function main() {
  const [dbPath, baseURL, sessionId] = process.argv.slice(2)
  const model = createOpenAICompatible({ name: 'scripted', baseURL, apiKey: 'k', includeUsage: true })('m')
  const engine = await createEngine({ database: dbPath, model, tools: childTools })
  const turn = engine.activeTurn(sessionId)
  const outcome = turn ? (await turn.done).outcome : null
  await engine.close()
  process.send?.({ type: 'result', recovered: Boolean(turn), outcome }, () => process.exit(0))
}

void main()
