/**
 * Scheduled turns (`engine.schedule`): a stored schedule starts a turn on its session at each
 * occurrence, claimed once in the fleet by whichever engine's sweep reaches it; missed ones
 * (every engine down) are fired as `catchUp` says; listed, paused, resumed and deleted from any
 * engine. Real engines on one database (a SQLite file, or PostgreSQL in the postgres project),
 * the scripted server over HTTP.
 */
import { createEngine, scheduleTool, type Engine, type TurnchartEvent } from '../../src'
import { createHarness, modelFor, type Harness } from '../support/harness'

let h: Harness | undefined
const others: Engine[] = []
afterEach(async () => {
  for (const engine of others.splice(0)) await engine.close()
  await h?.close()
  h = undefined
})

/** Another engine on the harness's database, sweeping often (it learns of schedules at its sweeps). */
async function otherEngine(harness: Harness, onEvent?: (event: TurnchartEvent) => void): Promise<Engine> {
  const engine = await createEngine({ database: harness.dbPath, model: modelFor(harness.server), recovery: { intervalMs: 200 }, ...(onEvent ? { onEvent } : {}) })
  others.push(engine)
  return engine
}

/** A turn's outcome, read from the database until it has one (whichever engine runs it). */
async function outcomeOf(engine: Engine, turnId: string): Promise<string> {
  for (;;) {
    const outcome = (await engine.getTurn(turnId))?.outcome
    if (outcome) return outcome
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

const fired = (events: TurnchartEvent[]) => events.filter((e): e is Extract<TurnchartEvent, { type: 'schedule.fired' }> => e.type === 'schedule.fired')

test('every: 1000 fires five turns in about five seconds, each completing, none twice', async () => {
  h = await createHarness()
  for (let i = 1; i <= 6; i++) h.server.text(`report ${i}`)
  const session = await h.engine.createSession()
  const start = Date.now()
  const { id, next } = await h.engine.schedule({ sessionId: session.id, input: 'write the report', every: 1000 })
  expect(next).toBeGreaterThanOrEqual(start + 1000)
  await h.waitForEvent((e) => e.type === 'schedule.fired' && fired(h!.events).length === 5, 9_000)
  const elapsed = Date.now() - start
  expect(elapsed).toBeGreaterThanOrEqual(5000)
  expect(elapsed).toBeLessThan(6500)
  await h.engine.unschedule(id)
  const turns = fired(h.events)
  // Each occurrence a second apart, each one turn, each turn completed.
  expect(turns.map((e) => e.occurrence - next!)).toEqual([0, 1000, 2000, 3000, 4000])
  for (const { turnId } of turns) await h.waitForEvent((e) => e.type === 'turn.transition' && e.turnId === turnId && e.to === 'completed', 5_000)
  expect(new Set(turns.map((e) => e.turnId)).size).toBe(5)
  // Each turn knows the schedule and occurrence that started it.
  for (const { turnId, occurrence } of turns) expect((await h.engine.getTurn(turnId))?.options?.schedule).toEqual({ id, occurrence })
  expect(h.server.requests.length).toBe(5)
  expect((await h.engine.messages(session.id)).filter((m) => m.info.role === 'user').length).toBe(5)
  expect(await h.engine.schedules()).toEqual([])
})

test('three engines on one database share a schedule: one turn per occurrence, whichever engine fires it; unschedule stops it on all', async () => {
  h = await createHarness({ recovery: { intervalMs: 200 } })
  for (let i = 1; i <= 12; i++) h.server.text(`tick ${i}`)
  // Every engine's fired occurrences, as each publishes them (the one that claimed it).
  const all: Array<Extract<TurnchartEvent, { type: 'schedule.fired' }>> = []
  let sixFired!: () => void
  const reached = new Promise<void>((resolve) => (sixFired = resolve))
  const hear = (e: TurnchartEvent) => {
    if (e.type !== 'schedule.fired') return
    all.push(e)
    if (all.length === 6) sixFired()
  }
  h.engine.subscribe(hear)
  const b = await otherEngine(h, hear)
  const c = await otherEngine(h, hear)
  const session = await h.engine.createSession()
  const { id } = await b.schedule({ sessionId: session.id, input: 'tick', every: 500, id: 'sch_ticks' })
  // The same id again is the same schedule.
  expect((await c.schedule({ sessionId: session.id, input: 'tick', every: 500, id: 'sch_ticks' })).id).toBe(id)
  await reached
  expect(await c.unschedule(id)).toBe(true)
  const count = all.length
  await new Promise((resolve) => setTimeout(resolve, 1200))
  expect(all.length).toBe(count) // stopped everywhere
  const occurrences = all.map((e) => e.occurrence)
  expect(new Set(occurrences).size).toBe(occurrences.length) // none twice
  for (const { turnId } of all) expect(await outcomeOf(h.engine, turnId)).toBe('completed')
  const user = (await h.engine.messages(session.id)).filter((m) => m.info.role === 'user')
  expect(user.length).toBe(count)
  expect(await h.engine.schedules({ sessionId: session.id })).toEqual([])
})

test('an engine closed across two occurrences fires only the latest when it opens (catchUp latest) and lists one as missed', async () => {
  h = await createHarness()
  h.server.text('caught up')
  const session = await h.engine.createSession()
  const { id, next } = await h.engine.schedule({ sessionId: session.id, input: 'daily digest', every: 400 })
  const database = h.dbPath
  await h.engine.close()
  await new Promise((resolve) => setTimeout(resolve, next! - Date.now() + 550)) // two occurrences pass
  const events: TurnchartEvent[] = []
  const reopened = await createEngine({ database, model: modelFor(h.server), onEvent: (e) => events.push(e) })
  others.push(reopened)
  const [listed] = await reopened.schedules()
  expect(listed).toMatchObject({ id, sessionId: session.id, missed: 1, every: 400, paused: false })
  expect(fired(events)).toEqual([expect.objectContaining({ scheduleId: id, occurrence: next! + 400 })])
  expect(events).toContainEqual(expect.objectContaining({ type: 'schedule.missed', scheduleId: id, missed: 1, latest: next! + 400 }))
  expect(listed.lastTurnId).toBe(fired(events)[0].turnId)
  await reopened.unschedule(id)
})

test('a one-time schedule at a time fires once; a paused one does not fire until resumed', async () => {
  h = await createHarness()
  h.server.text('reminded')
  h.server.text('resumed')
  const session = await h.engine.createSession()
  const at = new Date(Date.now() + 300)
  const once = await h.engine.schedule({ sessionId: session.id, input: 'remind me', at })
  expect(once.next).toBe(at.getTime())
  const paused = await h.engine.schedule({ sessionId: session.id, input: 'later', at: Date.now() + 300 })
  expect(await h.engine.pauseSchedule(paused.id)).toBe(true)
  await h.waitForEvent((e) => e.type === 'schedule.fired' && e.scheduleId === once.id, 3_000)
  await new Promise((resolve) => setTimeout(resolve, 400))
  expect(fired(h.events).map((e) => e.scheduleId)).toEqual([once.id])
  expect(await h.engine.schedules()).toEqual([
    expect.objectContaining({ id: once.id, next: null, last: at.getTime(), at: at.getTime() }),
    expect.objectContaining({ id: paused.id, paused: true }),
  ])
  expect(await h.engine.resumeSchedule(paused.id)).toBe(true)
  await h.waitForEvent((e) => e.type === 'schedule.fired' && e.scheduleId === paused.id, 3_000)
})

test('bad schedules throw InvalidArgumentError naming the field, and store nothing', async () => {
  h = await createHarness()
  const session = await h.engine.createSession()
  const cases: Array<[Record<string, unknown>, string]> = [
    [{ sessionId: 'ses_unknown', input: 'x', every: 1000 }, 'sessionId'],
    [{ sessionId: session.id, input: 'x' }, 'at'],
    [{ sessionId: session.id, input: 'x', cron: 'every day at nine' }, 'cron'],
    [{ sessionId: session.id, input: 'x', cron: '0 9 * * *', every: 1000 }, 'every'],
    [{ sessionId: session.id, input: 'x', cron: '0 9 * * *', timezone: 'Mars/Olympus' }, 'timezone'],
    [{ sessionId: session.id, input: 'x', every: 10 }, 'every'],
    [{ sessionId: session.id, input: 'x', every: 1000, catchUp: 'all' }, 'catchUp'],
    [{ sessionId: session.id, input: 'x', every: 1000, options: { model: 'nope' } }, 'options.model'],
    [{ sessionId: session.id, input: 'x', every: 1000, options: { whenBusy: 'reject' } }, 'options.whenBusy'],
  ]
  for (const [options, argument] of cases) {
    await expect(h.engine.schedule(options as never)).rejects.toMatchObject({ name: 'InvalidArgumentError', argument })
  }
  expect(await h.engine.schedules()).toEqual([])
})

test('scheduleTool: the model schedules a follow-up on its own session, approved by a person; it fires there once', async () => {
  h = await createHarness({ tools: { remind: scheduleTool() } })
  const at = new Date(Date.now() + 800).toISOString()
  h.server.tool('remind', { prompt: 'Check whether the deploy finished', at }, { id: 'call_remind' })
  h.server.text('I will check then.')
  h.server.text('The deploy finished.')
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'remind me to check the deploy in a moment')
  await h.waitForEvent((e) => e.type === 'approval.requested' && e.turnId === turn.id)
  expect(await h.engine.schedules()).toEqual([]) // nothing stored before the approval
  await h.engine.approve(turn.id, 'call_remind')
  expect(await turn.done).toMatchObject({ outcome: 'completed', text: 'I will check then.' })
  const [listed] = await h.engine.schedules({ sessionId: session.id })
  expect(listed).toMatchObject({ sessionId: session.id, at: Date.parse(at), next: Date.parse(at) })
  const fire = await h.waitForEvent((e) => e.type === 'schedule.fired' && e.scheduleId === listed.id, 5_000)
  await h.waitForEvent((e) => e.type === 'turn.transition' && e.turnId === (fire as { turnId: string }).turnId && e.to === 'completed', 5_000)
  const users = (await h.engine.messages(session.id)).filter((m) => m.info.role === 'user').map((m) => m.parts.flatMap((p) => (p.type === 'text' ? [p.text] : [])).join(''))
  expect(users).toEqual(['remind me to check the deploy in a moment', 'Check whether the deploy finished'])
})
