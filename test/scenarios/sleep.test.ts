/**
 * A tool puts its turn to sleep until a time (`sleep({ ms })`, `sleep({ until })`): the turn
 * waits in `sleeping`, parks (no actor, lease or timer held), and goes on at that time on
 * whichever engine sweeps, the model seeing the sleep's result; `engine.wake` ends it sooner, from
 * any engine; abort and close work as for the other waits. Real engines on one database (a SQLite
 * file, or PostgreSQL in the postgres project), the scripted server over HTTP.
 */
import { tool } from 'ai'
import { z } from 'zod'
import { createEngine, sleep, type Engine, type ToolPart } from '../../src'
import { assistantParts, createHarness, modelFor, type Harness } from '../support/harness'

let h: Harness | undefined
let other: Engine | undefined
afterEach(async () => {
  await other?.close()
  other = undefined
  await h?.close()
  h = undefined
})

const checks: string[] = []
beforeEach(() => {
  checks.length = 0
})

/** Checks a deploy; not done yet, so it asks to be called back in `ms` (its turn sleeps until then). */
const checkDeploy = (ms: number) =>
  tool({
    description: 'Check a deploy',
    inputSchema: z.object({ service: z.string() }),
    execute: async ({ service }) => {
      checks.push(service)
      return sleep({ ms, result: `${ms} ms passed: check ${service} again` })
    },
  })

async function toolPart(engine: Engine, sessionId: string): Promise<ToolPart> {
  return (await assistantParts(engine, sessionId)).find((p): p is ToolPart => p.type === 'tool')!
}

test('a sleeping turn parks and goes on by itself at its time: the model sees the sleep result, and the tool ran once', async () => {
  h = await createHarness({ tools: { check: checkDeploy(300) }, parkAfterMs: 0 })
  h.server.tool('check', { service: 'api' })
  h.server.text('api is deployed')
  const session = await h.engine.createSession()
  const before = Date.now()
  const turn = h.engine.prompt(session.id, 'deploy api and tell me when it is live')
  // Parked at once: this handle lets go; the turn is held by no engine, with no lease.
  await expect(turn.done).rejects.toMatchObject({ name: 'TurnParkedError', state: 'sleeping' })
  const parked = await h.engine.getTurn(turn.id)
  expect(parked).toMatchObject({ outcome: null, state: 'sleeping', owner: 'turnchart:parked', leaseUntil: null })
  expect(parked!.retryAt).toBeGreaterThanOrEqual(before + 300)
  expect(await h.engine.readStatus(session.id)).toMatchObject({ type: 'busy', state: 'sleeping', calls: [{ tool: 'check', status: 'deferred' }] })
  expect(h.engine.stats()).toMatchObject({ actors: 0, leases: 0 })
  await h.waitForEvent((e) => e.type === 'turn.transition' && e.turnId === turn.id && e.to === 'completed', 10_000)
  expect(Date.now() - before).toBeGreaterThanOrEqual(300)
  expect((await toolPart(h.engine, session.id)).state).toMatchObject({ status: 'completed', output: '300 ms passed: check api again' })
  expect(h.server.requests[1].body.messages.find((m: { role: string }) => m.role === 'tool').content).toContain('check api again')
  expect(checks).toEqual(['api'])
  expect((await h.engine.transitions(turn.id)).map((t) => t.to)).toEqual(['step-gate', 'streaming', 'tool-running', 'sleeping', 'tool-running', 'streaming', 'completed'])
})

test('a sleep of days (past what a Node timer holds) is ended early by engine.wake on another engine, which takes the parked turn', async () => {
  const days = 30 * 24 * 3600_000
  h = await createHarness({ tools: { check: checkDeploy(days) }, parkAfterMs: 0 })
  h.server.tool('check', { service: 'db' })
  h.server.text('checked db')
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'follow up on db next month')
  await expect(turn.done).rejects.toMatchObject({ name: 'TurnParkedError' })
  expect((await h.engine.getTurn(turn.id))!.retryAt).toBeGreaterThan(Date.now() + days - 60_000)
  other = await createEngine({ database: h.dbPath, model: modelFor(h.server), tools: { check: checkDeploy(days) }, limits: { context: 100_000, output: 10_000 } })
  const completed = new Promise<void>((resolve) => other!.subscribe((e) => e.type === 'turn.transition' && e.turnId === turn.id && e.to === 'completed' && resolve()))
  await other.wake(turn.id)
  await completed
  expect((await toolPart(other, session.id)).state).toMatchObject({ status: 'completed', output: `${days} ms passed: check db again` })
  expect(checks).toEqual(['db'])
  await expect(other.wake(turn.id)).rejects.toMatchObject({ name: 'NothingToWakeError', turnId: turn.id })
})

test('a sleeping turn is aborted like any waiting one: its call ends aborted, the model is not called again', async () => {
  h = await createHarness({ tools: { check: checkDeploy(3_600_000) } })
  h.server.tool('check', { service: 'web' })
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'watch web')
  await h.waitForEvent((e) => e.type === 'turn.transition' && e.turnId === turn.id && e.to === 'sleeping')
  expect(h.engine.status(session.id)).toMatchObject({ type: 'busy', state: 'sleeping' })
  await h.engine.abort(session.id)
  expect(await turn.done).toMatchObject({ outcome: 'aborted' })
  expect((await toolPart(h.engine, session.id)).state).toMatchObject({ status: 'error', error: 'Tool execution aborted' })
  expect(h.server.requests).toHaveLength(1)
})

test('a turn sleeping when its engine closes stays parked; the next engine on the database goes on at its time', async () => {
  h = await createHarness({ tools: { check: checkDeploy(400) } })
  h.server.tool('check', { service: 'cdn' })
  h.server.text('cdn is live')
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'roll out the cdn')
  await h.waitForEvent((e) => e.type === 'turn.transition' && e.turnId === turn.id && e.to === 'sleeping')
  await h.engine.close()
  await expect(turn.done).rejects.toMatchObject({ name: 'TurnParkedError', state: 'sleeping' })
  // The next engine sweeps often (the default is the lease's 30 s): the sleep ends there.
  other = await createEngine({ database: h.dbPath, model: modelFor(h.server), tools: { check: checkDeploy(400) }, limits: { context: 100_000, output: 10_000 }, recovery: { intervalMs: 50 } })
  await new Promise<void>((resolve) => other!.subscribe((e) => e.type === 'turn.transition' && e.turnId === turn.id && e.to === 'completed' && resolve()))
  expect(await other.getTurn(turn.id)).toMatchObject({ outcome: 'completed' })
  expect((await toolPart(other, session.id)).state).toMatchObject({ status: 'completed', output: '400 ms passed: check cdn again' })
  expect(checks).toEqual(['cdn'])
})

test('a UI stream of a sleeping turn ends at the sleep, as at any wait', async () => {
  h = await createHarness({ tools: { check: checkDeploy(3_600_000) } })
  h.server.tool('check', { service: 'ui' })
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'watch ui')
  const body = await turn.toUIMessageStreamResponse().text()
  expect(body).toContain('"type":"finish","finishReason":"tool-calls"')
  expect(body).toContain('"state":"sleeping"')
  await h.engine.abort(session.id)
  await turn.done
})

test('sleep refuses what it cannot keep, naming the option', () => {
  expect(() => sleep({})).toThrow(/one of \{ ms \} or \{ until \}/)
  expect(() => sleep({ ms: 5, until: Date.now() })).toThrow(/one of/)
  expect(() => sleep({ ms: -1 })).toThrow(expect.objectContaining({ name: 'InvalidArgumentError', message: expect.stringContaining('ms') }))
  expect(() => sleep({ until: new Date('never') })).toThrow(/until/)
})

test('engine.waiting lists a sleeping call with its deadline, by tenant; a malformed filter is refused', async () => {
  h = await createHarness({ tools: { check: checkDeploy(3_600_000) } })
  h.server.tool('check', { service: 'mail' }, { id: 'call_sleep' })
  const session = await h.engine.createSession({ tenant: 'acme' })
  const turn = h.engine.prompt(session.id, 'watch mail')
  await h.waitForEvent((e) => e.type === 'turn.transition' && e.turnId === turn.id && e.to === 'sleeping')
  const [entry] = await h.engine.waiting({ tenant: 'acme' })
  expect(entry).toMatchObject({ turnId: turn.id, sessionId: session.id, callId: 'call_sleep', toolName: 'check', kind: 'sleep', state: 'sleeping', parked: false, input: { service: 'mail' } })
  expect(entry.deadline).toBeGreaterThan(Date.now() + 3_500_000)
  expect(entry.kind !== 'throttled' && entry.since).toBeLessThanOrEqual(Date.now())
  expect(await h.engine.waiting({ tenant: 'other' })).toEqual([])
  await expect(h.engine.waiting({ tenant: 5 as never })).rejects.toMatchObject({ name: 'InvalidArgumentError' })
  await h.engine.abort(session.id)
  await turn.done
})
