/**
 * Rate limits held by the fleet (issue 71, item 3): with `rateLimits`, no engine on the database
 * sends a model more requests in any minute than its limit; a step that would pass it waits in
 * `throttled` (listed by `engine.waiting()`, parked past `parkAfterMs`) until the limit allows
 * it, and whichever engine sweeps then goes on with it. The minute is real: the model server records
 * when each request arrived, and the test counts requests of another fleet on the model's row first,
 * made just under a minute ago, so that the minute moves within seconds. Engines share a SQLite file or a PostgreSQL schema (the postgres
 * project runs this file again).
 */
import Database from 'better-sqlite3'
import { stepCountIs, tool } from 'ai'
import { z } from 'zod'
import { createEngine, type Engine, type TurnchartEvent } from '../../src'
import { startScriptedServer, type ScriptedServer } from '../../src/testing'
import { recordEvents } from '../support/event-log'
import { freshDatabase, modelFor, pgBaseUrl } from '../support/harness'

let server: ScriptedServer
let database: ReturnType<typeof freshDatabase>
const engines: Engine[] = []

beforeEach(async () => {
  server = await startScriptedServer()
  database = freshDatabase()
})
afterEach(async () => {
  for (const engine of engines.splice(0)) await engine.close()
  await server.close()
  await database.drop()
})

const noop = tool({ description: 'does nothing', inputSchema: z.object({}), execute: async () => 'done' })

async function engineWith(limit: number): Promise<{ engine: Engine; events: TurnchartEvent[] }> {
  const models = { primary: modelFor(server, 'primary-model') }
  const engine = await createEngine({
    database: database.database,
    model: ['primary'],
    models,
    tools: { noop },
    // two steps a turn, whatever reply a request gets: each is a call of `noop`, and the turn stops after its second step
    stopWhen: stepCountIs(2),
    rateLimits: { primary: { requestsPerMinute: limit } },
    parkAfterMs: 300,
    recovery: { onOpen: false },
  })
  engines.push(engine)
  return { engine, events: recordEvents(engine).events }
}

/** The most requests that arrived within any 60 s. */
function mostInAMinute(arrivals: number[]): number {
  const sorted = [...arrivals].sort((a, b) => a - b)
  let most = 0
  for (let i = 0, j = 0; i < sorted.length; i++) {
    while (sorted[i] - sorted[j] >= 60_000) j++
    most = Math.max(most, i - j + 1)
  }
  return most
}

/**
 * Counts `requests` on the model's row as requests of the minute that ends `freesInMs` from now
 * (another fleet's, made just under a minute ago), as the engines count their own: a test that
 * waits seconds for the window to move, not a minute.
 */
async function countedEarlier(model: string, requests: number, freesInMs: number): Promise<void> {
  // (a second's requests count until a minute, a second and the 200 ms arrival margin after its start)
  const admitted = JSON.stringify([{ second: Date.now() + freesInMs - 61_200, requests, tokens: 0 }])
  const values = [model, Date.now(), admitted]
  if (database.schema) {
    const { Client } = await import('pg')
    const client = new Client({ connectionString: pgBaseUrl, options: `-c search_path=${database.schema}` })
    await client.connect()
    await client.query('insert into turnchart_circuits (model, failures, since, admitted, version) values ($1, 0, $2, $3, 1)', values)
    await client.end()
  } else {
    const handle = new Database(database.database)
    handle.prepare('insert into turnchart_circuits (model, failures, since, admitted, version) values (?, 0, ?, ?, 1)').run(...values)
    handle.close()
  }
}

test('requestsPerMinute: 30 over three engines, 25 counted already: ten two-step turns race for the 5 requests left, the others wait in throttled (parked, listed by engine.waiting()) until the minute moves, and every turn completes; at most 30 counted in any minute', async () => {
  const fleet = [await engineWith(30), await engineWith(30), await engineWith(30)]
  for (let n = 0; n < 20; n++) server.tool('noop', {}, { id: `call_${n}` })
  const freesAt = Date.now() + 8_000
  await countedEarlier('primary', 25, freesAt - Date.now())
  const turns = await Promise.all(
    Array.from({ length: 10 }, async (_, n) => {
      const { engine } = fleet[n % 3]
      const session = await engine.createSession()
      return { engine, session, turn: engine.prompt(session.id, `turn ${n}`) }
    }),
  )
  // Five requests go; the steps over the limit are not sent: their turns wait, then park (every turn not
  // completed by then waits, for its first step or its second).
  const throttled = await waitUntil(async () => {
    const entries = (await fleet[0].engine.waiting()).filter((entry) => entry.kind === 'throttled')
    const outcomes = await Promise.all(turns.map(async ({ turn }) => (await fleet[0].engine.getTurn(turn.id))?.outcome))
    const completed = outcomes.filter((outcome) => outcome === 'completed').length
    return server.calls === 5 && entries.length > 0 && entries.length + completed === 10 && entries.every((entry) => entry.parked) ? entries : undefined
  }, 7_000)
  expect(throttled.length).toBeGreaterThanOrEqual(5)
  expect(server.calls).toBe(5)
  for (const entry of throttled) {
    expect(entry).toMatchObject({ kind: 'throttled', state: 'throttled', parked: true })
    // (when the 25 counted before leave the minute)
    expect(Math.abs(entry.deadline - freesAt)).toBeLessThan(50)
  }
  const [one] = throttled
  const holder = turns.find((t) => t.turn.id === one.turnId)!
  expect(await holder.engine.readStatus(holder.session.id)).toMatchObject({ type: 'busy', turnId: one.turnId, state: 'throttled' })

  // (a parked turn is finished by whichever engine's sweep takes it: its outcome is read from the database)
  const done = await Promise.all(turns.map(({ engine, turn }) => waitUntil(async () => (await engine.getTurn(turn.id))?.outcome ?? undefined, 12_000)))
  expect(done.every((outcome) => outcome === 'completed')).toBe(true)
  expect(server.calls).toBe(20)
  // The minute of the 25: five more in it, no more; the rest once it moved.
  expect(server.requests.filter((r) => r.at < freesAt).length).toBe(5)
  expect(mostInAMinute(server.requests.map((r) => r.at))).toBeLessThanOrEqual(30)
  // A throttled turn's log: the step not sent, its wait, and the same attempt asking again.
  const rows = await holder.engine.transitions(one.turnId)
  expect(rows.map((r) => `${r.from}>${r.event}>${r.to}`)).toContain('streaming>step.throttled>throttled')
  expect(rows.map((r) => `${r.from}>${r.event}>${r.to}`)).toContain('throttled>throttle.lifted>streaming')
  expect(rows.find((r) => r.event === 'step.throttled')?.payload).toMatchObject({ model: 'primary', until: one.deadline })
  const announced = fleet.flatMap(({ events }) => events.filter((e) => e.type === 'turn.throttled'))
  expect(announced.length).toBeGreaterThanOrEqual(throttled.length)
}, 40_000)

test('bad rate limits throw InvalidOptionError naming the field, and nothing is stored', async () => {
  const models = { primary: modelFor(server, 'primary-model') }
  const bad = [
    [{ backup: { requestsPerMinute: 1 } }, 'rateLimits.backup'],
    [{ primary: { requestsPerMinute: 0 } }, 'rateLimits.primary.requestsPerMinute'],
    [{ primary: { tokensPerMinute: -5 } }, 'rateLimits.primary.tokensPerMinute'],
    [{ primary: { requestsPerHour: 5 } }, 'rateLimits.primary.requestsPerHour'],
  ] as const
  for (const [rateLimits, option] of bad) {
    await expect(createEngine({ database: database.database, model: ['primary'], models, rateLimits: rateLimits as never })).rejects.toMatchObject({ name: 'InvalidOptionError', option })
  }
})

/** Resolves with what `probe` gives once it gives something (asked every 100 ms, for `withinMs`). */
async function waitUntil<T>(probe: () => Promise<T | undefined>, withinMs = 30_000): Promise<T> {
  for (const until = Date.now() + withinMs; Date.now() < until; ) {
    const value = await probe()
    if (value !== undefined) return value
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  throw new Error(`not within ${withinMs} ms`)
}
