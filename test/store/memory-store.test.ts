/**
 * What only the memory store has (everything it shares with the SQL stores is the conformance
 * suite's, test/store/conformance): engines running on it, several on one instance as on one
 * database, and a transaction's store that cannot outlive its transaction.
 */
import { tool } from 'ai'
import { z } from 'zod'
import { createEngine, MemoryStore, type Engine, type Store } from '../../src'
import { startScriptedServer, type ScriptedServer } from '../../src/testing'
import { recordEvents } from '../support/event-log'
import { modelFor } from '../support/harness'
import { session } from '../../src/testing/store-conformance/fixtures'

let server: ScriptedServer
const engines: Engine[] = []
beforeEach(async () => {
  server = await startScriptedServer()
})
afterEach(async () => {
  for (const engine of engines.splice(0)) await engine.close()
  await server.close()
})

let executions = 0
const tools = {
  danger: tool({
    description: 'Does something that needs a human',
    inputSchema: z.object({ target: z.string() }),
    needsApproval: true,
    execute: async ({ target }) => {
      executions++
      return `done to ${target}`
    },
  }),
}

async function engineOn(store: MemoryStore): Promise<Engine> {
  const engine = await createEngine({ database: store, model: modelFor(server), tools, recovery: { onOpen: false } })
  engines.push(engine)
  return engine
}

test('a turn runs on a MemoryStore, and its rows are in the store', async () => {
  const store = new MemoryStore()
  const engine = await engineOn(store)
  server.text('hello from memory')
  const s = await engine.createSession()
  const turn = engine.prompt(s.id, 'hi')
  expect((await turn.done).outcome).toBe('completed')
  const messages = await store.messages.list(s.id)
  expect(messages.map((m) => m.info.role)).toEqual(['user', 'assistant'])
  expect(messages[1].parts.find((p) => p.type === 'text')).toMatchObject({ text: 'hello from memory' })
  expect((await store.transitions.list(turn.id)).map((r) => r.to)).toEqual(['step-gate', 'streaming', 'completed'])
  expect(await store.turns.get(turn.id)).toMatchObject({ outcome: 'completed' })
})

test('engines of one process share one MemoryStore: a turn parked by one that closed is taken by the approve of another; a third runs nothing', async () => {
  executions = 0
  const store = new MemoryStore()
  const first = await engineOn(store)
  const second = await engineOn(store)
  const third = await engineOn(store)
  server.tool('danger', { target: 'prod' }, { id: 'call_danger' })
  server.text('all done')
  const s = await first.createSession()
  const firstEvents = recordEvents(first)
  const turn = first.prompt(s.id, 'deploy')
  await firstEvents.waitFor((e) => e.type === 'turn.transition' && e.to === 'awaiting-approval')
  await first.close()
  await expect(turn.done).rejects.toMatchObject({ name: 'TurnParkedError' })

  // The first engine's close left the caller's store as it was: the others read the parked turn from it.
  expect((await second.getSession(s.id))?.id).toBe(s.id)
  expect(await store.turns.get(turn.id)).toMatchObject({ state: 'awaiting-approval', outcome: null, owner: 'turnchart:parked' })
  expect(await second.recover()).toEqual([])
  const secondEvents = recordEvents(second)
  await second.approve(turn.id, 'call_danger')
  await secondEvents.waitFor((e) => e.type === 'turn.transition' && e.turnId === turn.id && e.to === 'completed')
  expect(third.activeTurn(s.id)).toBeUndefined()
  expect(executions).toBe(1)
  const parts = (await second.messages(s.id)).flatMap((m) => m.parts)
  expect(parts.find((p) => p.type === 'tool')).toMatchObject({ state: { status: 'completed', output: 'done to prod' } })
})

test("a transaction's store cannot be used once the transaction ended", async () => {
  const store = new MemoryStore()
  let leaked: Store | undefined
  await store.transaction(async (tx) => {
    leaked = tx
  })
  await expect(leaked!.sessions.insert(session())).rejects.toThrow(/transaction has ended/)
  expect(await store.sessions.list()).toEqual([])
})
