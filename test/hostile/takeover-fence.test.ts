/**
 * Every takeover claims the turn (issue 75, item 3): its epoch goes up, read from the row, so that
 * a run of the turn before the takeover can write nothing after it. Pinned on each path an engine
 * takes a turn by: a handoff (another engine takes the released turn), a parked turn taken by the
 * control that settles it, and this engine's own recovery of a turn whose final row could not be
 * written (`TurnOutcomeUnknownError`). Each test fails when its path resumes the turn without the
 * claim (with the fence the turn had).
 */
import { tool } from 'ai'
import { z } from 'zod'
import { createEngine, MemoryStore, TurnOutcomeUnknownError, type Engine, type Store, type TurnUpdate } from '../../src'
import { startScriptedServer, type ScriptedServer } from '../../src/testing'
import { recordEvents } from '../support/event-log'
import { modelFor } from '../support/harness'

let server: ScriptedServer
const cleanup: Array<() => Promise<unknown>> = []
beforeEach(async () => {
  server = await startScriptedServer()
})
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn().catch(() => undefined)
  await server.close()
})

async function engineOn(store: Store, options: Parameters<typeof createEngine>[0] = {}): Promise<Engine> {
  const engine = await createEngine({ database: store, model: modelFor(server), recovery: { onOpen: false, intervalMs: 0 }, ...options })
  cleanup.push(() => engine.close())
  return engine
}

const epochOf = async (store: Store, turnId: string) => (await store.turns.get(turnId))?.epoch

test('a handoff: the engine that takes the released turn claims it (epoch + 1) and finishes it', async () => {
  const store = new MemoryStore()
  const look = tool({ inputSchema: z.object({ at: z.string() }), execute: async ({ at }) => `looked at ${at}` })
  const first = await engineOn(store, { tools: { look } })
  const session = await first.createSession()
  // A tool step (the handoff holds the turn at the gate after it), then the answer the next engine asks for.
  server.push({ type: 'stream', chunks: [...Array.from({ length: 5 }, (_, i) => ({ text: `w${i} ` })), { tool: { name: 'look', input: { at: 'logs' } } }], delayMs: 30 })
  server.text('finished by the next engine')
  const seen = recordEvents(first)
  const turn = first.prompt(session.id, 'go')
  await seen.waitFor((e) => e.type === 'part.delta')
  const before = await epochOf(store, turn.id)
  await first.close({ handoff: true })
  await turn.done.catch(() => undefined)

  const next = await engineOn(store, { tools: { look } })
  const [resumed] = await next.recover()
  expect(resumed?.id).toBe(turn.id)
  expect((await resumed!.done).outcome).toBe('completed')
  expect(await epochOf(store, turn.id)).toBe(before! + 1)
})

test('a parked turn taken by the control that settles it: claimed from the parked owner (epoch + 1), then run to its end', async () => {
  const store = new MemoryStore()
  const deploy = tool({ inputSchema: z.object({ env: z.string() }), needsApproval: true, execute: async ({ env }) => `deployed ${env}` })
  const first = await engineOn(store, { tools: { deploy }, parkAfterMs: 0 })
  const session = await first.createSession()
  server.tool('deploy', { env: 'prod' }, { id: 'call_deploy' })
  server.text('deployed')
  const turn = first.prompt(session.id, 'ship it')
  await expect(turn.done).rejects.toMatchObject({ name: 'TurnParkedError' })
  const parked = await epochOf(store, turn.id)

  const other = await engineOn(store, { tools: { deploy } })
  await other.approve(turn.id, 'call_deploy')
  const resumed = other.activeTurn(session.id)
  expect(resumed?.id).toBe(turn.id)
  expect((await resumed!.done).outcome).toBe('completed')
  expect(await epochOf(store, turn.id)).toBe(parked! + 1)
})

test("this engine's own recovery of a turn whose final row could not be written: claimed (epoch + 1), not run with the fence it had", async () => {
  const memory = new MemoryStore()
  // The final row's update fails for a reason that passes while `failing` holds: past storage.outageMs the turn ends unwritten.
  const failing = { on: true }
  const refuseFinal = (tx: Store): Store => {
    const turns = new Proxy(tx.turns, {
      get(target, key) {
        const value = Reflect.get(target, key, target) as (...args: unknown[]) => unknown
        if (key !== 'update') return typeof value === 'function' ? value.bind(target) : value
        return (id: string, update: TurnUpdate, ...rest: unknown[]) => {
          if (failing.on && update.outcome) return Promise.reject(Object.assign(new Error('connection reset'), { code: 'ECONNRESET' }))
          return value.call(target, id, update, ...rest)
        }
      },
    })
    return new Proxy(tx, { get: (target, key) => (key === 'turns' ? turns : Reflect.get(target, key, target)) })
  }
  const store = new Proxy(memory, {
    get(target, key) {
      if (key === 'transaction') return <T>(fn: (tx: Store) => Promise<T>) => target.transaction((tx) => fn(refuseFinal(tx)))
      const value = Reflect.get(target, key, target) as unknown
      return typeof value === 'function' ? value.bind(target) : value
    },
  })
  const engine = await engineOn(store, { leaseMs: 300, storage: { outageMs: 100 } })
  const session = await engine.createSession()
  server.text('answered, but its final row is refused')
  server.text('answered again')
  const turn = engine.prompt(session.id, 'go')
  const error = await turn.done.catch((e: unknown) => e)
  expect(TurnOutcomeUnknownError.isInstance(error)).toBe(true)
  const held = await memory.turns.get(turn.id)
  expect(held).toMatchObject({ outcome: null, owner: expect.any(String) })

  failing.on = false
  // Its lease runs out (nothing renews a turn whose final row is in flight, and it ended here): the engine's own recovery takes it.
  await new Promise((resolve) => setTimeout(resolve, 400))
  const [resumed] = await engine.recover()
  expect(resumed?.id).toBe(turn.id)
  expect((await resumed!.done).outcome).toBe('completed')
  expect(await memory.turns.get(turn.id)).toMatchObject({ owner: held!.owner, epoch: held!.epoch! + 1, outcome: 'completed' })
  expect((await engine.transitions(turn.id)).map((row) => row.to)).toContain('interrupted')
})
