/**
 * A child process that runs one turn against the scripted server and reports, over IPC, each
 * transition once it is committed, so the parent can SIGKILL it in a known state.
 * Usage: node -r ts-node/register/transpile-only crash-child.ts <db> <baseURL> <scenario>
 */
import { createOpenAICompatible } from '@ai-sdk/openai-compatible'
import { createEngine } from '../../src'
import { childTools } from './child-tools'

async function main() {
  const [dbPath, baseURL] = process.argv.slice(2)
  const model = createOpenAICompatible({ name: 'scripted', baseURL, apiKey: 'k', includeUsage: true })('m')
  const engine = await createEngine({
    database: dbPath,
    model,
    tools: childTools,
    flushIntervalMs: 10,
    retry: { jitter: 0 },
    recovery: { onOpen: false },
  })
  engine.subscribe((event) => {
    if (event.type === 'turn.transition') process.send?.({ type: 'transition', to: event.to, turnId: event.turnId })
    if (event.type === 'part.delta') process.send?.({ type: 'delta', delta: event.delta })
  })
  const session = await engine.createSession()
  process.send?.({ type: 'session', sessionId: session.id })
  engine.prompt(session.id, 'do the work')
}

if (require.main === module) void main()
