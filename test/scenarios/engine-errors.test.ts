/**
 * Errors and defaults a user meets in the first hour: every method of a closed engine throws
 * EngineClosedError; unknown sessions and turns follow one rule (lookups answer undefined,
 * reads of their contents throw a NotFound error, status is memory-only); a driver error is
 * a StorageError with the driver's error as cause; unsupported database URLs and model id
 * strings fail in createEngine naming the option; two engines of one process on one SQLite
 * file share its connection instead of blocking the event loop.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { createEngine, EngineClosedError, InvalidOptionError, SessionNotFoundError, StorageError, TurnNotFoundError, type Engine } from '../../src'
import { createHarness, modelFor, sqliteOnly, type Harness } from '../support/harness'

let h: Harness | undefined
afterEach(async () => {
  await h?.close()
  h = undefined
})

/** Plausible arguments for each method; a method missing here fails the test (so new ones get a guard). */
const calls: Record<string, (engine: Engine) => unknown> = {
  createSession: (e) => e.createSession(),
  getSession: (e) => e.getSession('ses_x'),
  listSessions: (e) => e.listSessions(),
  prompt: (e) => e.prompt('ses_x', 'hi'),
  approve: (e) => e.approve('trn_x', 'call_x'),
  steer: (e) => e.steer('ses_x', 'also this'),
  deny: (e) => e.deny('trn_x', 'call_x'),
  abort: (e) => e.abort('ses_x'),
  activeTurn: (e) => e.activeTurn('ses_x'),
  status: (e) => e.status('ses_x'),
  messages: (e) => e.messages('ses_x'),
  transitions: (e) => e.transitions('trn_x'),
  getTurn: (e) => e.getTurn('trn_x'),
  childTurns: (e) => e.childTurns('trn_x'),
  subscribe: (e) => e.subscribe(() => {}),
  recover: (e) => e.recover(),
  replay: (e) => e.replay('trn_x'),
  prune: (e) => e.prune({ olderThan: Date.now() }),
  updateSession: (e) => e.updateSession('ses_x', { title: 't' }),
  deleteSession: (e) => e.deleteSession('ses_x'),
  revert: (e) => e.revert('ses_x', 'msg_x'),
  unrevert: (e) => e.unrevert('ses_x'),
  fork: (e) => e.fork('ses_x', 'msg_x'),
  forkTurn: (e) => e.forkTurn('trn_x', { step: 1 }),
  usage: (e) => e.usage('ses_x'),
  queue: (e) => e.queue('ses_x'),
  cancelQueued: (e) => e.cancelQueued('trn_x'),
  readStatus: (e) => e.readStatus('ses_x'),
  backup: (e) => e.backup('closed-engine-backup.db'),
  approvalReceipts: (e) => e.approvalReceipts('ses_x'),
  upgradeCheck: (e) => e.upgradeCheck(),
  tenantUsage: (e) => e.tenantUsage('acme'),
  resolveCall: (e) => e.resolveCall('trn_x', 'call_x', { output: 1 }),
  wake: (e) => e.wake('trn_x'),
  waiting: (e) => e.waiting(),
  modelHealth: (e) => e.modelHealth(),
  schedule: (e) => e.schedule({ sessionId: 'ses_x', input: 'hi', every: 1000 }),
  schedules: (e) => e.schedules(),
  unschedule: (e) => e.unschedule('sch_x'),
  pauseSchedule: (e) => e.pauseSchedule('sch_x'),
  resumeSchedule: (e) => e.resumeSchedule('sch_x'),
}

/** Reads of what the engine holds, which a closed engine answers: it holds nothing. */
const afterClose: Record<string, (engine: Engine) => unknown> = {
  stats: (e) => expect(e.stats()).toMatchObject({ actors: 0, leases: 0, timers: 0 }),
  followHandedOff: (e) => expect(e.followHandedOff()).toBeUndefined(),
}

test('every method of a closed engine throws (or rejects with) EngineClosedError; close() again is a no-op', async () => {
  h = await createHarness()
  const session = await h.engine.createSession()
  await h.engine.close()
  await h.engine.close()
  const methods = Object.keys(h.engine).filter((k) => typeof (h!.engine as unknown as Record<string, unknown>)[k] === 'function' && k !== 'close')
  expect(methods.filter((m) => !(m in calls) && !(m in afterClose))).toEqual([])
  for (const read of Object.values(afterClose)) read(h.engine)
  for (const [name, call] of Object.entries(calls)) {
    let outcome: unknown
    try {
      outcome = await call(h.engine)
    } catch (error) {
      outcome = error
    }
    expect({ name, error: EngineClosedError.isInstance(outcome) ? 'EngineClosedError' : outcome }).toEqual({ name, error: 'EngineClosedError' })
  }
  // messages() of an existing session too (it used to reach the destroyed driver).
  await expect(h.engine.messages(session.id)).rejects.toMatchObject({ name: 'EngineClosedError' })
})

test('unknown sessions and turns: lookups answer undefined, contents throw NotFound, status is idle (memory only)', async () => {
  h = await createHarness()
  expect(await h.engine.getSession('ses_unknown')).toBeUndefined()
  expect(await h.engine.getTurn('trn_unknown')).toBeUndefined()
  await expect(h.engine.messages('ses_unknown')).rejects.toMatchObject({ name: 'SessionNotFoundError', sessionId: 'ses_unknown' })
  await expect(h.engine.messages('ses_unknown')).rejects.toBeInstanceOf(SessionNotFoundError)
  await expect(h.engine.transitions('trn_unknown')).rejects.toMatchObject({ name: 'TurnNotFoundError', turnId: 'trn_unknown' })
  await expect(h.engine.replay('trn_unknown')).rejects.toBeInstanceOf(TurnNotFoundError)
  expect(h.engine.status('ses_unknown')).toEqual({ type: 'idle' })
  await expect(h.engine.prompt('ses_unknown', 'hi').done).rejects.toMatchObject({ name: 'SessionNotFoundError' })
  // A known turn that has no transitions yet is not an error.
  h.server.text('ok')
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'hi')
  await turn.done
  expect((await h.engine.transitions(turn.id)).at(-1)?.to).toBe('completed')
})

sqliteOnly('a driver error is a StorageError naming the operation, with the driver error as cause', async () => {
  h = await createHarness()
  const Database = require('better-sqlite3')
  const raw = new Database(h.dbPath)
  raw.exec('alter table turnchart_sessions rename to renamed_sessions')
  raw.close()
  const error = await h.engine.listSessions().catch((e: unknown) => e)
  expect(StorageError.isInstance(error)).toBe(true)
  expect(error).toMatchObject({ name: 'StorageError', operation: 'list sessions' })
  expect(String((error as Error & { cause: Error }).cause.message)).toMatch(/no such table: turnchart_sessions/)
  await expect(h.engine.createSession()).rejects.toMatchObject({ name: 'StorageError', operation: 'create a session' })
})

test.each([
  ['database', { database: 'mysql://user:secret@127.0.0.1/app' }, /URL scheme mysql: is not supported/],
  ['database', { database: 'file:///tmp/app.db' }, /URL scheme file: is not supported/],
  ['model', { model: 'openai/gpt-4o' }, /model id string/],
  ['onEvent', { onEvent: 'log' }, /function/],
])('createEngine refuses %s %#: InvalidOptionError naming the option', async (option, options, message) => {
  const error = await createEngine({ model: { specificationVersion: 'v3', provider: 'test', modelId: 'test', doStream: async () => ({}) } as never, ...(options as object) } as never).catch((e: unknown) => e)
  expect(InvalidOptionError.isInstance(error)).toBe(true)
  expect(error).toMatchObject({ option })
  expect((error as Error).message).toMatch(message)
  expect((error as Error).message).not.toContain('secret')
})

sqliteOnly('two engines of one process on one SQLite file share its connection: both write, the event loop never stalls', async () => {
  h = await createHarness({ busyTimeoutMs: 3000 })
  const second = await createEngine({ database: h.dbPath, model: modelFor(h.server), busyTimeoutMs: 3000, flushIntervalMs: 1 })
  const lag = monitorEventLoopDelay({ resolution: 10 })
  lag.enable()
  try {
    for (let i = 0; i < 4; i++) h.server.push({ type: 'stream', chunks: Array.from({ length: 30 }, (_, k) => ({ text: `t${k} ` })), delayMs: 2 })
    const [a, b] = await Promise.all([h.engine.createSession(), second.createSession()])
    const results = await Promise.all([
      h.engine.prompt(a.id, 'one').done,
      second.prompt(b.id, 'two').done,
    ])
    const more = await Promise.all([h.engine.prompt(a.id, 'three').done, second.prompt(b.id, 'four').done])
    expect([...results, ...more].map((r) => r.outcome)).toEqual(['completed', 'completed', 'completed', 'completed'])
    expect((await second.messages(a.id)).length).toBe(4) // each engine sees the other's rows
    lag.disable()
    expect(lag.max / 1e6).toBeLessThan(1000)
    await second.close()
    // The first engine's connection outlives the second's close.
    expect((await h.engine.listSessions()).length).toBe(2)
  } finally {
    lag.disable()
    await second.close()
  }
})

sqliteOnly('createEngine on a file that is not a database: StorageError with the driver error as cause', async () => {
  const fs = require('node:fs')
  const path = require('node:path')
  const os = require('node:os')
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'turnchart-notdb-'))
  const file = path.join(dir, 'notes.db')
  fs.writeFileSync(file, 'plain text, not SQLite '.repeat(200))
  try {
    const error = await createEngine({ database: file, model: { specificationVersion: 'v3', provider: 'test', modelId: 'test', doStream: async () => ({}) } as never }).catch((e: unknown) => e)
    expect(StorageError.isInstance(error)).toBe(true)
    expect(error).toMatchObject({ operation: expect.stringMatching(/database/) })
    expect(String((error as { cause: Error }).cause.message)).toMatch(/not a database/)
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
})
