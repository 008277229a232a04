/**
 * One schedule, three engines on PostgreSQL (two of them child processes), one of them SIGKILLed
 * in the middle (issue 72): every occurrence of `every: 500` starts exactly one turn, whichever
 * engine claims it; none is fired twice or lost (the schedule's occurrences since the first are
 * as many as the session's turns, and it missed none); the model is asked for each of them.
 */
import path from 'node:path'
import { createEngine, type Engine } from '../../src'
import { startScriptedServer, type ScriptedServer } from '../../src/testing'
import { forkChild, type TestChild } from '../support/child-process'
import { dropSchemas, freshSchemaName, modelFor, pgBaseUrl, withParams } from '../support/harness'
import { itPostgres } from '../support/requires'

jest.setTimeout(60_000)

let server: ScriptedServer
let schema: string
const children: TestChild[] = []
let engine: Engine | undefined
beforeEach(async () => {
  server = await startScriptedServer()
  schema = freshSchemaName()
})
afterEach(async () => {
  for (const child of children.splice(0)) {
    if (child.process.exitCode === null && child.process.signalCode === null) child.process.kill('SIGKILL')
    await child.exited
  }
  await engine?.close()
  await server.close()
  await dropSchemas(schema)
})

/** The session's turns, read until `done` says they are enough. */
async function turnsUntil(engine: Engine, sessionId: string, done: (turns: Array<{ id: string; outcome: string | null }>) => boolean) {
  for (const deadline = Date.now() + 30_000; Date.now() < deadline; await new Promise((resolve) => setTimeout(resolve, 100))) {
    const turns = (await engine.usage(sessionId)).turns.map((t) => t.turnId)
    const rows = await Promise.all(turns.map(async (id) => ({ id, outcome: (await engine!.getTurn(id))?.outcome ?? null })))
    if (done(rows)) return rows
  }
  throw new Error('the turns never got there')
}

itPostgres('every: 500 on three engines, one SIGKILLed after ten occurrences: twenty occurrences, twenty turns, none twice, none lost', async () => {
  const database = withParams(pgBaseUrl, { schema })
  for (let i = 0; i < 40; i++) server.text(`tick ${i + 1}`)
  engine = await createEngine({ database, model: modelFor(server), recovery: { intervalMs: 200 } })
  for (let i = 0; i < 2; i++) {
    const child = forkChild(path.join(__dirname, 'schedule-child.ts'), [database, server.url])
    children.push(child)
    await child.waitFor((m) => m.type === 'up')
  }
  const session = await engine.createSession()
  const { id, next: first } = await engine.schedule({ sessionId: session.id, input: 'tick', every: 500 })
  await turnsUntil(engine, session.id, (turns) => turns.length >= 10)
  const [victim, survivor] = children
  victim.process.kill('SIGKILL')
  await victim.exited
  await turnsUntil(engine, session.id, (turns) => turns.length >= 20)
  expect(await engine.pauseSchedule(id)).toBe(true)
  const [schedule] = await engine.schedules()
  await engine.unschedule(id)
  const turns = await turnsUntil(engine, session.id, (rows) => rows.every((t) => t.outcome !== null))
  expect(turns.map((t) => t.outcome)).toEqual(turns.map(() => 'completed'))
  // The occurrences from the first to the last fired: one turn each, none missed.
  expect(schedule.missed).toBe(0)
  expect((schedule.last! - first!) / 500 + 1).toBe(turns.length)
  // Each turn asked the model (a turn whose request the kill cut asks again, with the same history).
  const asked = new Set(server.requests.map((r) => r.body.messages.filter((m: { role: string }) => m.role === 'user').length))
  expect([...asked].sort((a, b) => a - b)).toEqual(turns.map((_, i) => i + 1))
  expect(survivor.messages.filter((m) => m.type === 'fired').length + victim.messages.filter((m) => m.type === 'fired').length).toBeGreaterThan(0)
})
