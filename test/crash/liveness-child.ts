/**
 * An engine on PostgreSQL that stands for one on another host: `os.hostname()` answers another
 * name, so that no engine here can tell it died by its pid (the same-host check), only by what
 * the database says. It prompts one turn and tells its deltas over IPC; the test SIGKILLs it.
 * Usage: node liveness-child.ts <postgres URL> <model baseURL>
 */
import os from 'node:os'
import { createOpenAICompatible } from '@ai-sdk/openai-compatible'

// (a second host cannot run here: its name is what this process says it is)
os.hostname = () => 'another-host'

async function main() {
  const [database, baseURL] = process.argv.slice(2)
  const { createEngine } = await import('../../src')
  const engine = await createEngine({
    database,
    model: createOpenAICompatible({ name: 'scripted', baseURL, apiKey: 'k', includeUsage: true })('m'),
    flushIntervalMs: 10,
    recovery: { onOpen: false, intervalMs: 0 },
  })
  engine.subscribe((event) => {
    if (event.type === 'part.delta') process.send?.({ type: 'delta', turnId: event.turnId, delta: event.delta })
  })
  const session = await engine.createSession()
  engine.prompt(session.id, 'hello')
}

void main()
