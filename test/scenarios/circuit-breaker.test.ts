/**
 * A circuit shared by the fleet (issue 71, item 2): a model whose provider failed
 * `failureThreshold` times in a window is asked by no engine on the database until its circuit
 * half-opens; then one request probes it and its answer closes it. Each model is its own
 * scripted server over HTTP; engines share a SQLite file or a PostgreSQL schema (the postgres
 * project runs this file again). What a user sees: who was asked (the servers' calls, the
 * step-start part's model), the log's rows, `model.circuit` events and `engine.modelHealth()`.
 */
import { createEngine, type Engine, type EngineOptions, type TurnchartEvent } from '../../src'
import { startScriptedServer, type ScriptedServer } from '../../src/testing'
import { recordEvents } from '../support/event-log'
import { freshDatabase, modelFor } from '../support/harness'

let primary: ScriptedServer
let backup: ScriptedServer
let database: ReturnType<typeof freshDatabase>
const engines: Engine[] = []

beforeEach(async () => {
  primary = await startScriptedServer()
  backup = await startScriptedServer()
  database = freshDatabase()
})
afterEach(async () => {
  for (const engine of engines.splice(0)) await engine.close()
  await primary.close()
  await backup.close()
  await database.drop()
})

/** An engine on the test's database with the two models and fast retries. */
async function engineWith(options: Partial<EngineOptions> = {}): Promise<{ engine: Engine; events: TurnchartEvent[] }> {
  const models = { primary: modelFor(primary, 'primary-model'), backup: modelFor(backup, 'backup-model') }
  const engine = await createEngine({ database: database.database, model: models.primary, models, retry: { initialDelayMs: 1, maxDelayMs: 5, jitter: 0 }, ...options })
  engines.push(engine)
  return { engine, events: recordEvents(engine).events }
}

const stepModels = async (engine: Engine, sessionId: string) =>
  (await engine.messages(sessionId)).flatMap((m) => m.parts).flatMap((p) => (p.type === 'step-start' ? [p.model] : []))

const circuitEvents = (events: TurnchartEvent[]) => events.flatMap((e) => (e.type === 'model.circuit' ? [{ model: e.model, state: e.state }] : []))

/** Resolves once `engine` sees the model's circuit half-open (its `openUntil` passed). */
async function halfOpen(engine: Engine, model: string): Promise<void> {
  const health = (await engine.modelHealth()).find((m) => m.model === model)
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, (health?.openUntil ?? 0) - Date.now() + 20)))
}

test("after the primary's circuit opens on engine A, engine B sends the primary nothing: its turns go to the backup; once it half-opens one probe closes it for both", async () => {
  const circuitBreaker = { failureThreshold: 2, openMs: 1_500 }
  const a = await engineWith({ circuitBreaker })
  const b = await engineWith({ circuitBreaker, recovery: { onOpen: false } })
  primary.error(503, { error: { message: 'primary is down' } })
  primary.error(503, { error: { message: 'primary is down' } })
  backup.text('A: from the backup')
  backup.text('B: from the backup')

  const sessionA = await a.engine.createSession()
  expect(await a.engine.prompt(sessionA.id, 'hello', { model: ['primary', 'backup'] }).done).toMatchObject({ outcome: 'completed', text: 'A: from the backup' })
  expect(circuitEvents(a.events)).toEqual([{ model: 'primary', state: 'open' }])
  // (every registered name is listed: `default` is the engine's `model`)
  expect(await b.engine.modelHealth()).toEqual([
    { model: 'backup', state: 'closed', failures: 0 },
    { model: 'default', state: 'closed', failures: 0 },
    { model: 'primary', state: 'open', failures: 2, openUntil: expect.any(Number) },
  ])

  const sessionB = await b.engine.createSession()
  const turnB = b.engine.prompt(sessionB.id, 'hello', { model: ['primary', 'backup'] })
  expect(await turnB.done).toMatchObject({ outcome: 'completed', text: 'B: from the backup' })
  expect(primary.calls).toBe(2)
  expect(await stepModels(b.engine, sessionB.id)).toEqual(['backup'])
  // B's step fell back at once, the open circuit its reason
  const fallback = (await b.engine.transitions(turnB.id)).find((row) => row.event === 'step.failed')
  expect(fallback).toMatchObject({ to: 'retry-waiting', payload: { fallback: { from: 'primary', to: 'backup', reason: expect.stringContaining('CircuitOpenError') } } })

  await halfOpen(b.engine, 'primary')
  primary.text('the primary is back')
  expect(await b.engine.prompt(sessionB.id, 'again', { model: ['primary', 'backup'] }).done).toMatchObject({ outcome: 'completed', text: 'the primary is back' })
  expect(circuitEvents(b.events)).toEqual([{ model: 'primary', state: 'closed' }])
  expect((await a.engine.modelHealth()).find((m) => m.model === 'primary')).toEqual({ model: 'primary', state: 'closed', failures: 0 })
  expect([primary.calls, backup.calls]).toEqual([3, 2])
})

test('a turn with no model to fall back to waits in retry-waiting until the circuit half-opens, then its probe completes it', async () => {
  const { engine, events } = await engineWith({ circuitBreaker: { failureThreshold: 1, openMs: 600 } })
  primary.error(503, { error: { message: 'primary is down' } })
  primary.text('answered by the probe')
  const session = await engine.createSession()
  const turn = engine.prompt(session.id, 'hello', { model: 'primary' })
  expect(await turn.done).toMatchObject({ outcome: 'completed', text: 'answered by the probe' })
  expect(primary.calls).toBe(2)
  const failed = (await engine.transitions(turn.id)).filter((row) => row.event === 'step.failed').map((row) => (row.payload.error as { name: string }).name)
  expect(failed).toEqual(['APIError', 'CircuitOpenError'])
  expect(circuitEvents(events)).toEqual([
    { model: 'primary', state: 'open' },
    { model: 'primary', state: 'closed' },
  ])
})

test("the caller's own errors are not the provider's: a 400 counts for no circuit", async () => {
  const { engine } = await engineWith({ circuitBreaker: { failureThreshold: 1 } })
  primary.error(400, { error: { message: 'bad request' } })
  const session = await engine.createSession()
  expect((await engine.prompt(session.id, 'hello').done).outcome).toBe('failed')
  expect((await engine.modelHealth()).map((m) => [m.model, m.state, m.failures])).toEqual([
    ['backup', 'closed', 0],
    ['default', 'closed', 0],
    ['primary', 'closed', 0],
  ])
})

test('circuitBreaker: false sends every request and lists no circuit; bad options are refused naming the field', async () => {
  const { engine } = await engineWith({ circuitBreaker: false, retry: { maxAttempts: 3, initialDelayMs: 1, maxDelayMs: 5, jitter: 0 } })
  for (let i = 0; i < 3; i++) primary.error(503, { error: { message: 'down' } })
  const session = await engine.createSession()
  expect(await engine.prompt(session.id, 'hello').done).toMatchObject({ outcome: 'failed', error: { name: 'RetriesExhaustedError' } })
  expect(primary.calls).toBe(3)
  expect(await engine.modelHealth()).toEqual([])
  for (const [circuitBreaker, option] of [
    [{ failureThreshold: 0 }, 'circuitBreaker.failureThreshold'],
    [{ openMs: -1 }, 'circuitBreaker.openMs'],
    [{ windowMs: 'long' }, 'circuitBreaker.windowMs'],
    [{ thresold: 3 }, 'circuitBreaker.thresold'],
    [true, 'circuitBreaker'],
  ] as const) {
    await expect(createEngine({ database: ':memory:', model: modelFor(primary), circuitBreaker: circuitBreaker as never })).rejects.toMatchObject({ name: 'InvalidOptionError', option })
  }
})

test("a 429 with retry-after: 2 seen by engine A holds engine B's requests for that model for 2 s; B's turn waits and completes", async () => {
  const a = await engineWith()
  const b = await engineWith({ recovery: { onOpen: false } })
  primary.error(429, { error: { message: 'slow down' } }, { 'retry-after': '2' })
  primary.text('A, after its wait')
  primary.text('B, after the hold')
  const sessionA = await a.engine.createSession()
  const turnA = a.engine.prompt(sessionA.id, 'hello', { model: 'primary' })
  await new Promise<void>((resolve) => a.engine.subscribe((e) => e.type === 'turn.transition' && e.turnId === turnA.id && e.to === 'retry-waiting' && resolve()))
  const sessionB = await b.engine.createSession()
  const turnB = b.engine.prompt(sessionB.id, 'hello', { model: 'primary' })
  expect(await turnB.done).toMatchObject({ outcome: 'completed' })
  expect(await turnA.done).toMatchObject({ outcome: 'completed' })
  // no request reached the primary within 2 s of the 429 (the hold runs from when A heard it, after it arrived)
  const [first, ...rest] = primary.requests.map((r) => r.at)
  expect(rest).toHaveLength(2)
  for (const at of rest) expect(at - first).toBeGreaterThanOrEqual(2_000)
  const failed = (await b.engine.transitions(turnB.id)).filter((row) => row.event === 'step.failed').map((row) => row.payload.error)
  expect(failed).toEqual([expect.objectContaining({ name: 'ModelHeldError', model: 'primary' })])
})
