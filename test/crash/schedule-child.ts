/**
 * An engine on the schedule's database (PostgreSQL) that sweeps often, so it claims some of the
 * schedule's occurrences: it tells over IPC that it is up and each occurrence it fired.
 * Usage: node schedule-child.ts <database> <model baseURL>
 */
import { createOpenAICompatible } from '@ai-sdk/openai-compatible'

async function main() {
  const [database, baseURL] = process.argv.slice(2)
  const { createEngine } = await import('../../src')
  const engine = await createEngine({
    database,
    model: createOpenAICompatible({ name: 'scripted', baseURL, apiKey: 'k', includeUsage: true })('m'),
    flushIntervalMs: 10,
    recovery: { intervalMs: 200 },
  })
  engine.subscribe((event) => {
    if (event.type === 'schedule.fired') process.send?.({ type: 'fired', turnId: event.turnId })
  })
  process.send?.({ type: 'up' })
}

void main()
