/**
 * An engine with two models, `primary` and `backup` (each its own scripted server), that prompts
 * one turn naming both and tells its fallbacks and deltas over IPC, so the test can SIGKILL it
 * while the backup streams.
 * Usage: node fallback-kill-child.ts <db file> <primary baseURL> <backup baseURL>
 */
import { createOpenAICompatible } from '@ai-sdk/openai-compatible'
import { createEngine } from '../../src'

async function main() {
  const [database, primaryURL, backupURL] = process.argv.slice(2)
  const model = (baseURL: string, id: string) => createOpenAICompatible({ name: 'scripted', baseURL, apiKey: 'k', includeUsage: true })(id)
  const primary = model(primaryURL, 'primary-model')
  const engine = await createEngine({
    database,
    model: primary,
    models: { primary, backup: model(backupURL, 'backup-model') },
    retry: { attemptsPerModel: 1, initialDelayMs: 1, jitter: 0 },
    flushIntervalMs: 10,
    recovery: { onOpen: false },
  })
  engine.subscribe((event) => {
    if (event.type === 'model.fallback') process.send?.({ type: 'fallback', turnId: event.turnId, to: event.to })
    if (event.type === 'part.delta') process.send?.({ type: 'delta', turnId: event.turnId, delta: event.delta })
  })
  const session = await engine.createSession({ model: ['primary', 'backup'] })
  process.send?.({ type: 'session', sessionId: session.id })
  engine.prompt(session.id, 'hello')
}

void main()
