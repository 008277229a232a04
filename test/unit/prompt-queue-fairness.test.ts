/**
 * The queue's round robin between tenants, at the moment two passes overlap in one engine (a
 * turn's end and the poll): the first pass has started the next tenant's prompt, whose start
 * transaction (which takes the slot) has not committed yet. The second pass reads no running
 * turn and must not start another tenant's prompt meanwhile: that start could take the lock
 * first, and the tenant whose turn it was would wait (seen in CI as a flaky tenants test).
 */
import { MemoryStore } from '../../src'
import { Bus } from '../../src/core/bus'
import type { ResolvedConfig } from '../../src/config/resolved-config'
import { PromptQueue } from '../../src/conversation/prompt-queue'
import { SteerWrites } from '../../src/conversation/steer-writes'
import type { Turn } from '../../src/turn/turn-handle'

test("a pass that finds a tenant's start still in flight here starts no other tenant's prompt", async () => {
  const store = new MemoryStore()
  const now = Date.now()
  for (const [sessionId, tenant] of [['s1', 't1'], ['s2', 't2']]) {
    await store.sessions.insert({ id: sessionId, title: null, time: { created: now, updated: now }, tenant })
    await store.queue.insert({ id: `q_${sessionId}`, sessionId, input: [{ type: 'text', text: 'go' }], options: {}, time: { created: now } })
  }
  await store.slots!.running('t1', '') // t1 was served last: t2 is next
  // Starts that never commit: each stays this engine's turn of its session, in flight.
  const startingHere = new Map<string, Turn>()
  const queue = new PromptQueue({
    store,
    bus: new Bus(() => undefined),
    config: { concurrency: { total: 1 }, controlPollIntervalMs: 1000 } as ResolvedConfig,
    isClosed: () => false,
    activeTurn: (sessionId) => startingHere.get(sessionId),
    start(record) {
      const turn = { id: record.id, sessionId: record.sessionId, done: new Promise(() => undefined) } as unknown as Turn
      startingHere.set(record.sessionId, turn)
      return turn
    },
    steers: new SteerWrites(),
  })
  await queue.drainFairly()
  await queue.drainFairly()
  expect([...startingHere.keys()]).toEqual(['s2'])
  queue.close()
})
