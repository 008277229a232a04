/**
 * A worker process for the multi-process test: an engine on a shared PostgreSQL schema that
 * runs the prompts its parent sends and reports every turn that ends in it (its own, and the
 * turns it took over from a dead worker).
 * Usage: node -r ts-node/register/transpile-only pg-worker.ts <database URL> <baseURL>
 */
import { createOpenAICompatible } from '@ai-sdk/openai-compatible'
import { createEngine } from '../../src'

async function main() {
  const [database, baseURL] = process.argv.slice(2)
  const model = createOpenAICompatible({ name: 'scripted', baseURL, apiKey: 'k', includeUsage: true })('m')
  // A lease well above any event-loop stall under a loaded test run: the killed worker's turns
  // are taken over at once anyway (its pid is gone), so the lease never has to expire.
  const engine = await createEngine({ database, model, leaseMs: 5000, recovery: { intervalMs: 200 }, flushIntervalMs: 20 })
  engine.subscribe((event) => {
    if (event.type === 'turn.transition' && ['completed', 'failed', 'aborted'].includes(event.to)) {
      process.send?.({ type: 'ended', sessionId: event.sessionId, turnId: event.turnId, outcome: event.to, pid: process.pid })
    }
  })
  process.on('message', (message: { type: string; sessionId: string; text: string }) => {
    if (message.type !== 'prompt') return
    try {
      const turn = engine.prompt(message.sessionId, message.text)
      process.send?.({ type: 'started', sessionId: message.sessionId, turnId: turn.id })
      turn.done.catch((error: { name?: string }) => process.send?.({ type: 'refused', sessionId: message.sessionId, error: error?.name }))
    } catch (error) {
      process.send?.({ type: 'refused', sessionId: message.sessionId, error: (error as Error).name })
    }
  })
  process.send?.({ type: 'ready' })
}

void main()
