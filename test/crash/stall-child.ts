/**
 * A child process that runs one turn with a short lease and reports over IPC: each committed
 * transition, each delta, and `turn.lost` when it finds that another engine owns its turn.
 * On `turn.lost` it closes its engine and exits, so the parent can check what it wrote. On
 * `{ type: 'stall', flag }` it blocks its event loop (no timer, no I/O callback runs) until the
 * file `flag` exists: a stall between two of its transactions.
 * Usage: node -r ts-node/register/transpile-only stall-child.ts <database> <baseURL> <leaseMs>
 */
import fs from 'node:fs'
import { createOpenAICompatible } from '@ai-sdk/openai-compatible'
import { createEngine } from '../../src'

async function main() {
  const [database, baseURL, leaseMs] = process.argv.slice(2)
  const model = createOpenAICompatible({ name: 'scripted', baseURL, apiKey: 'k', includeUsage: true })('m')
  const engine = await createEngine({
    database,
    model,
    flushIntervalMs: 10,
    leaseMs: Number(leaseMs),
    recovery: { onOpen: false, intervalMs: 0 },
  })
  engine.subscribe((event) => {
    if (event.type === 'turn.transition') process.send?.({ type: 'transition', to: event.to, turnId: event.turnId })
    if (event.type === 'part.delta') process.send?.({ type: 'delta', delta: event.delta })
    if (event.type === 'turn.lost') {
      process.send?.({ type: 'lost', turnId: event.turnId, error: event.error.name })
      void engine.close().then(() => process.exit(0))
    }
  })
  process.on('message', (message: { type: string; flag?: string }) => {
    if (message.type !== 'stall') return
    process.send?.({ type: 'stalled' }, () => {
      const sleeper = new Int32Array(new SharedArrayBuffer(4))
      while (!fs.existsSync(message.flag!)) Atomics.wait(sleeper, 0, 0, 5)
    })
  })
  const session = await engine.createSession()
  process.send?.({ type: 'session', sessionId: session.id })
  const turn = engine.prompt(session.id, 'write at length')
  turn.done.catch(() => undefined)
}

if (require.main === module) void main()
