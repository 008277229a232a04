/**
 * Parked turns: a turn waiting for an approval holds nothing in its engine once it has waited
 * `parkAfterMs` (0 here: at once): no actor, no lease, no timer, still none after the recovery
 * sweeps ran (which do not claim it), and the engine that approves it (another one here) takes it
 * and runs it to its end. A real engine, on SQLite and PostgreSQL (two engines on one database).
 */
import { tool } from 'ai'
import { z } from 'zod'
import { createEngine, MemoryStore, type Engine, type TurnchartEvent } from '../../src'
import { parkedOwner } from '../../src/core/parking'
import { deployTool } from '../support/deploy-tool'
import { createHarness, modelFor, type Harness } from '../support/harness'
import { recoverCommand } from '../../src/cli/write-commands'
import type { CliIO } from '../../src/cli/io'

jest.setTimeout(120_000) // 200 turns twice: seconds on an idle machine, more on a loaded CI runner

let h: Harness
let other: Engine | undefined
afterEach(async () => {
  await other?.close()
  other = undefined
  await h?.close()
})

const { deploy, deployed } = deployTool()

/** Resolves when `engine.stats().sweeps` grew by `n` (a sweep has no event of its own; checked between short waits). */
async function sweepsRun(engine: Engine, n: number): Promise<void> {
  const target = engine.stats().sweeps + n
  while (engine.stats().sweeps < target) await new Promise((resolve) => setTimeout(resolve, 10))
}

test('200 parked turns hold no actor, lease or timer, not even after two sweeps; each resumes when another engine approves it', async () => {
  const count = 200
  deployed.length = 0
  h = await createHarness({ tools: { deploy }, parkAfterMs: 0, recovery: { intervalMs: 50 } })
  for (let i = 0; i < count; i++) h.server.tool('deploy', { env: `env-${i}` })
  const calls = new Map<string, string>()
  h.engine.subscribe((event) => {
    if (event.type === 'approval.requested') calls.set(event.turnId, event.calls[0].callId)
  })
  const sessions = await Promise.all(Array.from({ length: count }, () => h.engine.createSession()))
  const turns = sessions.map((session) => h.engine.prompt(session.id, 'ship it'))
  const ends = await Promise.allSettled(turns.map((turn) => turn.done))
  expect(ends.map((end) => (end.status === 'rejected' ? (end.reason as Error).name : end.status))).toEqual(Array(count).fill('TurnParkedError'))
  expect(h.engine.stats()).toMatchObject({ actors: 0, leases: 0, timers: 0 })

  await sweepsRun(h.engine, 2)
  expect(h.engine.stats()).toMatchObject({ actors: 0, leases: 0, timers: 0 })
  const rows = await Promise.all(turns.map((turn) => h.engine.getTurn(turn.id)))
  expect(rows.every((row) => row?.outcome === null && row.state === 'awaiting-approval' && row.owner === 'turnchart:parked' && row.leaseUntil === null)).toBe(true)
  expect(deployed).toEqual([])

  for (let i = 0; i < count; i++) h.server.text(`done ${i}`)
  other = await createEngine({ database: h.dbPath, model: modelFor(h.server), tools: { deploy }, limits: { context: 100_000, output: 10_000 } })
  const completed = new Set<string>()
  let allDone!: () => void
  const finished = new Promise<void>((resolve) => (allDone = resolve))
  other.subscribe((event: TurnchartEvent) => {
    if (event.type === 'turn.transition' && event.to === 'completed' && completed.add(event.turnId).size === count) allDone()
  })
  await Promise.all(turns.map((turn) => other!.approve(turn.id, calls.get(turn.id)!, { by: 'ops' })))
  await finished
  expect(deployed).toHaveLength(count)
  expect(new Set(deployed).size).toBe(count)
  expect(h.engine.stats()).toMatchObject({ actors: 0, leases: 0, timers: 0 })
  const ended = await Promise.all(turns.map((turn) => other!.getTurn(turn.id)))
  expect(ended.every((row) => row?.outcome === 'completed')).toBe(true)
})

test('a parked turn keeps its chart state and parts: approved, denied, aborted on the engine that parked it; turnchart recover leaves it', async () => {
  deployed.length = 0
  h = await createHarness({ tools: { deploy }, parkAfterMs: 0 })
  h.server.tools([
    { name: 'deploy', input: { env: 'a' }, id: 'call_a' },
    { name: 'deploy', input: { env: 'b' }, id: 'call_b' },
  ])
  h.server.text('one of two')
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'ship both')
  await expect(turn.done).rejects.toMatchObject({ name: 'TurnParkedError' })
  // One decision of two: taken, decided, still waiting, parked again.
  await h.engine.approve(turn.id, 'call_a', { by: 'ada' })
  expect(await h.engine.readStatus(session.id)).toMatchObject({ type: 'busy', state: 'awaiting-approval', approvals: [{ callId: 'call_b' }] })
  await h.engine.deny(turn.id, 'call_b', { reason: 'not b', by: 'ada' })
  const end = await h.waitForEvent((e) => e.type === 'turn.transition' && e.turnId === turn.id && e.to === 'completed')
  expect(end).toBeDefined()
  await h.engine.activeTurn(session.id)?.done // the handle of the engine that took it settles after its last row
  expect(deployed).toEqual(['a'])
  expect((await h.engine.approvalReceipts(session.id)).map((r) => [r.callId, r.decision, r.by])).toEqual([
    ['call_a', 'approved', 'ada'],
    ['call_b', 'denied', 'ada'],
  ])

  // `turnchart recover` (recovery policy abort) leaves a parked turn alone.
  h.server.tool('deploy', { env: 'd' }, { id: 'call_d' })
  h.server.text('not d, then')
  const parked = h.engine.prompt(session.id, 'and d')
  await expect(parked.done).rejects.toMatchObject({ name: 'TurnParkedError' })
  const out: string[] = []
  const io = { stdout: { write: (text: string) => out.push(text) }, stderr: { write: () => true }, env: {} } as unknown as CliIO
  expect(await recoverCommand([h.dbPath], io)).toBe(0)
  expect(out.join('')).toBe('no turn to recover\n')
  expect(await h.engine.getTurn(parked.id)).toMatchObject({ outcome: null, state: 'awaiting-approval', owner: 'turnchart:parked' })
  await h.engine.deny(parked.id, 'call_d', 'no')
  await h.waitForEvent((e) => e.type === 'turn.transition' && e.turnId === parked.id && e.to === 'completed')
  await h.engine.activeTurn(session.id)?.done

  h.server.tool('deploy', { env: 'c' }, { id: 'call_c' })
  const second = h.engine.prompt(session.id, 'and c')
  await expect(second.done).rejects.toMatchObject({ name: 'TurnParkedError' })
  await h.engine.abort(session.id)
  expect(await h.engine.getTurn(second.id)).toMatchObject({ outcome: 'aborted' })
  expect(h.engine.stats()).toMatchObject({ actors: 0, leases: 0, timers: 0 })
})

test('a turn waiting on a deferred call parks too: resolveCall takes it, and a deadline that passes is settled by the sweep', async () => {
  const { defer } = await import('../../src')
  const ci = tool({ description: 'Run CI', inputSchema: z.object({ slow: z.boolean() }), execute: async ({ slow }) => defer(slow ? {} : { timeoutMs: 400 }) })
  h = await createHarness({ tools: { ci }, parkAfterMs: 0, recovery: { intervalMs: 20 } })
  h.server.tool('ci', { slow: true }, { id: 'call_ci' })
  h.server.text('CI passed')
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'run ci')
  await expect(turn.done).rejects.toMatchObject({ name: 'TurnParkedError', state: 'awaiting-deferred' })
  expect(h.engine.stats()).toMatchObject({ actors: 0, leases: 0, timers: 0 })
  const ended = h.waitForEvent((e) => e.type === 'turn.transition' && e.turnId === turn.id && e.to === 'completed')
  await h.engine.resolveCall(turn.id, 'call_ci', { output: 'green' })
  await ended
  await h.engine.activeTurn(session.id)?.done

  // (a deadline far enough off that the turn parks before it passes, even on a loaded machine: at 30 ms it did not always)
  h.server.tool('ci', { slow: false }, { id: 'call_late' })
  h.server.text('CI timed out')
  const second = h.engine.prompt(session.id, 'run ci again')
  await expect(second.done).rejects.toMatchObject({ name: 'TurnParkedError' })
  await h.waitForEvent((e) => e.type === 'turn.transition' && e.turnId === second.id && e.to === 'completed', 10_000)
  const part = (await h.engine.messages(session.id)).flatMap((m) => m.parts).find((p) => p.type === 'tool' && p.callId === 'call_late')
  expect(part).toMatchObject({ state: { status: 'error', error: expect.stringContaining('deadline') } })
})

test('close() parks a turn waiting for an approval (not released for a sweep to take): another engine that approves it takes it and completes it', async () => {
  deployed.length = 0
  h = await createHarness({ tools: { deploy }, parkAfterMs: 3_600_000 })
  h.server.tool('deploy', { env: 'prod' }, { id: 'call_prod' })
  h.server.text('shipped')
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'ship it')
  await h.waitForEvent((e) => e.type === 'approval.requested' && e.turnId === turn.id)
  expect(h.engine.stats()).toMatchObject({ actors: 1, timers: 1 })
  await h.engine.close()
  await expect(turn.done).rejects.toMatchObject({ name: 'TurnParkedError' })
  other = await createEngine({ database: h.dbPath, model: modelFor(h.server), tools: { deploy }, limits: { context: 100_000, output: 10_000 } })
  // Parked, so the second engine's recovery at open left it alone: it waits as it was.
  expect(await other.getTurn(turn.id)).toMatchObject({ outcome: null, state: 'awaiting-approval', owner: 'turnchart:parked', leaseUntil: null })
  expect(other.stats()).toMatchObject({ actors: 0 })
  const completed = new Promise<void>((resolve) => other!.subscribe((event) => event.type === 'turn.transition' && event.turnId === turn.id && event.to === 'completed' && resolve()))
  await other.approve(turn.id, 'call_prod', { by: 'ops' })
  await completed
  expect(deployed).toEqual(['prod'])
})

/**
 * A memory store whose hand-over of a turn to the parked owner, once committed, waits for the
 * engine's next lease renewal to be answered: the renewal then finds the row gone from the
 * engine, as one that ran at that moment on a loaded machine did.
 */
class RenewalAfterParkingStore extends MemoryStore {
  renewalsAfterParking = 0
  constructor() {
    super()
    let nextRenewal: (() => void) | undefined
    const renew = this.turns.renewLeases.bind(this.turns)
    this.turns.renewLeases = async (...args) => {
      const waiting = nextRenewal // (a renewal that began after the hand-over's claim committed)
      const renewed = await renew(...args)
      if (waiting) {
        this.renewalsAfterParking++
        // (the engine's own continuation, which hears the loss, runs before the hand-over's)
        setImmediate(waiting)
      }
      return renewed
    }
    const claim = this.turns.claim.bind(this.turns)
    this.turns.claim = async (id, expected, owner, leaseUntil) => {
      const fence = await claim(id, expected, owner, leaseUntil)
      if (owner === parkedOwner) await new Promise<void>((resolve) => (nextRenewal = resolve))
      nextRenewal = undefined
      return fence
    }
  }
}

test("a lease renewal that runs while the turn's row is handed to the parked owner does not call the parked turn lost", async () => {
  const store = new RenewalAfterParkingStore()
  h = await createHarness({ database: store, tools: { deploy }, parkAfterMs: 0, leaseMs: 300 })
  h.server.tool('deploy', { env: 'prod' })
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'ship it')
  await expect(turn.done).rejects.toMatchObject({ name: 'TurnParkedError' })
  expect(store.renewalsAfterParking).toBe(1)
  expect(await h.engine.getTurn(turn.id)).toMatchObject({ state: 'awaiting-approval', owner: parkedOwner, outcome: null })
  expect(h.events.some((e) => e.type === 'turn.lost')).toBe(false)
})
