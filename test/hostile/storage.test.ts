/**
 * Failing storage on SQLite (issue 9, case 4): the database locked by another process longer
 * than the busy timeout, the disk full (`PRAGMA max_page_count`), the database made read-only
 * or deleted under a running engine. The turn fails with a StorageError naming the cause, the
 * failed transaction leaves no row, the events already published match the rows stored, and
 * the engine serves other sessions afterwards. See docs/reliability.md.
 */
import { spawn } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import Database from 'better-sqlite3'
import { Kysely, SqliteDialect } from 'kysely'
import { createEngine, TurnOutcomeUnknownError, type Engine, type EngineOptions, type TurnchartEvent } from '../../src'
import { startScriptedServer, type ScriptedServer } from '../../src/testing'
import { modelFor, tempDbPath } from '../support/harness'
import { openParts } from './helpers'
import { PassThrough } from 'node:stream'
import { showCommand } from '../../src/cli/show'
import { openReadOnlyStore } from '../../src/store/backends/read-only-store'
import { sessionPage } from '../../src/viewer/page-views'

let server: ScriptedServer
let engine: Engine | undefined
let cleanup: Array<() => unknown> = []
const events: TurnchartEvent[] = []

beforeEach(async () => {
  server = await startScriptedServer()
  events.length = 0
})
afterEach(async () => {
  await engine?.close().catch(() => undefined)
  engine = undefined
  await server.close()
  for (const fn of cleanup.reverse()) await fn()
  cleanup = []
})

async function open(database: string | Kysely<any>, options: Partial<EngineOptions> = {}) {
  engine = await createEngine({
    database,
    model: modelFor(server),
    retry: { initialDelayMs: 1, maxDelayMs: 5, jitter: 0 },
    flushIntervalMs: 20,
    recovery: { onOpen: true, intervalMs: 0 },
    ...options,
  })
  engine.subscribe((e) => {
    events.push(e)
    for (const waiter of waiters) if (waiter.predicate(e)) waiter.seen()
  })
  return engine
}

/** A slow answer: `n` chunks 50 ms apart, so a fault can land mid-stream. */
function slowAnswer(n = 30, piece = 'x'.repeat(2000)) {
  server.push({ type: 'stream', chunks: Array.from({ length: n }, () => ({ text: piece })), delayMs: 50 })
}

const waiters = new Set<{ predicate: (e: TurnchartEvent) => boolean; seen(): void }>()

/** Resolves at the first event (past or future) matching `predicate`, as the engine publishes it. */
function waitFor(predicate: (e: TurnchartEvent) => boolean, timeoutMs = 5000): Promise<void> {
  if (events.some(predicate)) return Promise.resolve()
  return new Promise((resolve, reject) => {
    const waiter = {
      predicate,
      seen() {
        waiters.delete(waiter)
        clearTimeout(timer)
        resolve()
      },
    }
    const timer = setTimeout(() => (waiters.delete(waiter), reject(new Error('event not seen'))), timeoutMs)
    waiters.add(waiter)
  })
}

/**
 * What `done` says of a turn whose final row could not be written: it rejects with
 * `TurnOutcomeUnknownError` (the outcome is recovery's to decide), the write's failure as `cause`.
 */
async function outcomeUnknown(turn: { id: string; sessionId: string; done: Promise<unknown> }): Promise<TurnOutcomeUnknownError> {
  const error = await turn.done.then(
    () => null,
    (rejected: unknown) => rejected,
  )
  if (!TurnOutcomeUnknownError.isInstance(error)) throw new Error(`done did not reject with TurnOutcomeUnknownError: ${String(error)}`)
  expect(error).toMatchObject({ turnId: turn.id, sessionId: turn.sessionId, cause: { name: 'StorageError' } })
  return error
}

/** Every chunk of a UI message stream response (server-sent events), once it ends. */
async function readChunks(response: Response): Promise<Array<{ type: string; data?: { storage?: unknown } }>> {
  const text = await response.text()
  return text
    .split('\n')
    .filter((line) => line.startsWith('data: ') && line !== 'data: [DONE]')
    .map((line) => JSON.parse(line.slice('data: '.length)))
}

/** The rows of a turn read with a connection of our own: transitions and the turn row. */
function stored(file: string, turnId: string) {
  const db = new Database(file, { readonly: true })
  try {
    const transitions = db.prepare('select seq, from_state, to_state from turnchart_transitions where turn_id = ? order by seq').all(turnId) as Array<{ seq: number; from_state: string; to_state: string }>
    const turn = db.prepare('select state, outcome from turnchart_turns where id = ?').get(turnId) as { state: string; outcome: string | null }
    return { transitions, turn }
  } finally {
    db.close()
  }
}

/** Published transitions of a turn must be exactly the stored ones: a row is published only after its commit. */
function expectPublishedMatchesStored(file: string, turnId: string) {
  const published = events
    .filter((e): e is Extract<TurnchartEvent, { type: 'turn.transition' }> => e.type === 'turn.transition' && e.turnId === turnId)
    .map((e) => ({ seq: e.seq, from_state: e.from, to_state: e.to }))
  const rows = stored(file, turnId)
  return { published, rows }
}

/** Holds `BEGIN EXCLUSIVE` on `file` from another process for `ms`; resolves once the lock is held, and `released` when it exits. */
function lockFromAnotherProcess(file: string, ms: number): Promise<{ released: Promise<void> }> {
  const script = `
    const Database = require('better-sqlite3')
    const db = new Database(${JSON.stringify(file)})
    db.exec('BEGIN EXCLUSIVE')
    process.stdout.write('locked\\n')
    setTimeout(() => { db.exec('COMMIT'); db.close(); process.exit(0) }, ${ms})
  `
  const child = spawn(process.execPath, ['-e', script], { cwd: path.resolve(__dirname, '../..'), stdio: ['ignore', 'pipe', 'inherit'] })
  cleanup.push(() => child.kill('SIGKILL'))
  const released = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  return new Promise((resolve, reject) => {
    child.stdout.on('data', (data: Buffer) => {
      if (data.toString().includes('locked')) resolve({ released })
    })
    child.once('exit', (code) => reject(new Error(`lock holder exited with ${code}`)))
  })
}

test('locked by another process longer than the busy timeout: the turn waits for the lock (storage.outageMs), says so (events, status, stats, its UI stream), and completes; published = stored, each row once', async () => {
  const file = tempDbPath()
  cleanup.push(() => fs.rmSync(path.dirname(file), { recursive: true, force: true }))
  await open(file, { busyTimeoutMs: 100, storage: { outageMs: 10_000 } })
  slowAnswer()
  const session = await engine!.createSession()
  const turn = engine!.prompt(session.id, 'write a lot')
  const chunks = readChunks(turn.toUIMessageStreamResponse())
  // What the engine says while the write waits, read as the wait is announced.
  let whileWaiting: unknown
  engine!.subscribe((e) => {
    if (e.type === 'storage.waiting') whileWaiting = { waits: engine!.stats().storageWaits, status: engine!.status(session.id) }
  })
  await waitFor((e) => e.type === 'part.delta')
  const { released } = await lockFromAnotherProcess(file, 1500)
  expect((await turn.done).outcome).toBe('completed')
  await released
  const waited = events.filter((e) => e.type === 'storage.waiting' || e.type === 'storage.resumed')
  expect(waited.length).toBeGreaterThanOrEqual(2)
  expect(waited[0]).toMatchObject({ type: 'storage.waiting', turnId: turn.id, error: { name: 'StorageError', message: expect.stringContaining('database is locked') } })
  expect(waited.at(-1)).toMatchObject({ type: 'storage.resumed', turnId: turn.id, gaveUp: false })
  expect((waited.at(-1) as { waitedMs: number }).waitedMs).toBeGreaterThan(0)
  expect(whileWaiting).toMatchObject({ waits: 1, status: { type: 'busy', turnId: turn.id, storage: { operation: expect.any(String), since: expect.any(Number) } } })
  expect(engine!.stats().storageWaits).toBe(0)
  const states = (await chunks).filter((c) => c.type === 'data-turn-state').map((c) => c.data!)
  expect(states.some((data) => data.storage !== undefined)).toBe(true)
  expect(states.at(-1)!.storage).toBeUndefined()
  const { published, rows } = expectPublishedMatchesStored(file, turn.id)
  expect(rows.transitions).toEqual(published)
  expect(rows.turn).toEqual({ state: 'completed', outcome: 'completed' })
  expect(await openParts(engine!, session.id)).toEqual([])
  // Afterwards the log says where the turn stood still: turnchart show and the viewer's page.
  const resumed = waited.filter((e) => e.type === 'storage.resumed') as Array<{ operation: string; waitedMs: number }>
  const logged = (await engine!.transitions(turn.id)).flatMap((row) => (row.storageWaits ?? []).map((wait) => ({ ...wait, seq: row.seq })))
  expect(logged.map(({ operation }) => operation)).toEqual(resumed.map(({ operation }) => operation))
  const out = new PassThrough()
  let shown = ''
  out.on('data', (chunk) => (shown += chunk))
  expect(await showCommand([file, session.id], { stdout: out, stderr: new PassThrough(), env: { NO_COLOR: '1' } })).toBe(0)
  for (const wait of logged) expect(shown).toContain(`waited ${(wait.waitedMs / 1000).toFixed(2)} s for the database (${wait.operation}) before #${wait.seq}`)
  const store = await openReadOnlyStore(file)
  try {
    const page = await store.read((s) => sessionPage(s, session.id))
    expect(page!.turns[0]!.path.flatMap((step) => step.storageWaits ?? [])).toEqual(logged.map(({ operation, waitedMs }) => ({ operation, waitedMs })))
  } finally {
    await store.close()
  }
})

test('locked by another process longer than storage.outageMs: done rejects (TurnOutcomeUnknownError, cause StorageError "database is locked"); published = stored; other sessions work after the lock goes', async () => {
  const file = tempDbPath()
  cleanup.push(() => fs.rmSync(path.dirname(file), { recursive: true, force: true }))
  await open(file, { busyTimeoutMs: 100, storage: { outageMs: 300 } })
  slowAnswer()
  const session = await engine!.createSession()
  const turn = engine!.prompt(session.id, 'write a lot')
  await waitFor((e) => e.type === 'part.delta')
  const { released } = await lockFromAnotherProcess(file, 1500)
  // The final row could not be written either: `done` says the outcome is not known (recovery decides it).
  expect((await outcomeUnknown(turn)).cause.message).toContain('database is locked')
  expect(events.some((e) => e.type === 'session.error' && e.error.name === 'StorageError')).toBe(true)
  expect(engine!.status(session.id)).toEqual({ type: 'idle' })
  await released

  const { published, rows } = expectPublishedMatchesStored(file, turn.id)
  expect(rows.transitions).toEqual(published.filter((p) => rows.transitions.some((r) => r.seq === p.seq)))
  // Nothing stored that was not published (no partial transaction). The final row could not be
  // written either: the turn's row stays open for recovery, never reported as something it is not.
  expect(rows.transitions.length).toBe(published.length)
  for (const row of rows.transitions) expect(published).toContainEqual(row)
  expect(await engine!.getTurn(turn.id)).toMatchObject({ outcome: null, state: published.at(-1)!.to_state })

  // The engine serves other sessions once the lock is gone.
  server.text('fine again')
  const other = await engine!.createSession()
  expect((await engine!.prompt(other.id, 'hello').done).outcome).toBe('completed')
  expect(await openParts(engine!, other.id)).toEqual([])
})

/** An engine on a SQLite file through a connection of the test's own (to set `max_page_count` on it). */
async function openWithHandle(options: Partial<EngineOptions>) {
  const file = tempDbPath()
  cleanup.push(() => fs.rmSync(path.dirname(file), { recursive: true, force: true }))
  const handle = new Database(file)
  handle.pragma('journal_mode = WAL')
  handle.pragma('busy_timeout = 1000')
  handle.pragma('foreign_keys = ON')
  const db = new Kysely<any>({ dialect: new SqliteDialect({ database: handle }) })
  cleanup.push(() => db.destroy())
  await open(db, options)
  return { file, handle }
}

test('disk full (max_page_count) mid-turn, space back 600 ms later: the turn waits (storage.outageMs) and completes; no row twice', async () => {
  const { file, handle } = await openWithHandle({ storage: { outageMs: 10_000 } })
  slowAnswer(30, 'y'.repeat(20_000))
  const session = await engine!.createSession()
  const turn = engine!.prompt(session.id, 'fill the disk')
  await waitFor((e) => e.type === 'part.delta')
  handle.pragma(`max_page_count = ${handle.pragma('page_count', { simple: true }) as number}`)
  setTimeout(() => handle.pragma('max_page_count = 1073741823'), 600)
  expect((await turn.done).outcome).toBe('completed')
  expect(events.filter((e) => e.type === 'storage.waiting' && e.turnId === turn.id).length).toBeGreaterThan(0)
  const { published, rows } = expectPublishedMatchesStored(file, turn.id)
  expect(rows.transitions).toEqual(published)
  expect(handle.pragma('integrity_check', { simple: true })).toBe('ok')
  expect(await openParts(engine!, session.id)).toEqual([])
})

test('disk full (max_page_count) mid-turn, without waiting (storage.outageMs 0): done rejects (TurnOutcomeUnknownError, cause StorageError "database or disk is full"); no partial rows; the engine serves other sessions when space is back', async () => {
  const { file, handle } = await openWithHandle({ storage: { outageMs: 0 } })
  slowAnswer(30, 'y'.repeat(20_000))
  const session = await engine!.createSession()
  const turn = engine!.prompt(session.id, 'fill the disk')
  await waitFor((e) => e.type === 'part.delta')
  const pages = handle.pragma('page_count', { simple: true }) as number
  handle.pragma(`max_page_count = ${pages}`)
  // Neither the row nor the failure's row fits: the outcome is recovery's to decide.
  expect((await outcomeUnknown(turn)).cause.message).toContain('database or disk is full')

  const { published, rows } = expectPublishedMatchesStored(file, turn.id)
  for (const row of rows.transitions) expect(published).toContainEqual(row)
  expect(handle.pragma('integrity_check', { simple: true })).toBe('ok')

  expect(engine!.status(session.id)).toEqual({ type: 'idle' })
  // Space back: the engine serves other sessions.
  handle.pragma('max_page_count = 1073741823')
  server.text('room again')
  const other = await engine!.createSession()
  expect((await engine!.prompt(other.id, 'hello').done).outcome).toBe('completed')
  expect(await openParts(engine!, other.id)).toEqual([])
})

test('made read-only under the engine (query_only on its connection): done rejects (TurnOutcomeUnknownError, cause StorageError "attempt to write a readonly database")', async () => {
  const file = tempDbPath()
  cleanup.push(() => fs.rmSync(path.dirname(file), { recursive: true, force: true }))
  const handle = new Database(file)
  handle.pragma('journal_mode = WAL')
  const db = new Kysely<any>({ dialect: new SqliteDialect({ database: handle }) })
  cleanup.push(() => db.destroy())
  await open(db)
  slowAnswer(10)
  const session = await engine!.createSession()
  const turn = engine!.prompt(session.id, 'read only')
  await waitFor((e) => e.type === 'part.delta')
  handle.pragma('query_only = ON')
  expect((await outcomeUnknown(turn)).cause.message).toMatch(/readonly|read-only|query_only/i)
  handle.pragma('query_only = OFF')
  server.text('writable again')
  const other = await engine!.createSession()
  expect((await engine!.prompt(other.id, 'hello').done).outcome).toBe('completed')
})

test('chmod 0444 on the file under a running engine changes nothing for the open connection: the turn completes', async () => {
  const file = tempDbPath()
  cleanup.push(() => fs.rmSync(path.dirname(file), { recursive: true, force: true }))
  await open(file)
  slowAnswer(10)
  const session = await engine!.createSession()
  const turn = engine!.prompt(session.id, 'chmod')
  await waitFor((e) => e.type === 'part.delta')
  fs.chmodSync(file, 0o444)
  expect((await turn.done).outcome).toBe('completed')
  expect(await openParts(engine!, session.id)).toEqual([])
})

// In WAL mode SQLite does not notice that its file was unlinked (SQLITE_READONLY_DBMOVED is
// checked only when a rollback journal is opened), so turnchart compares the file's inode with
// the one it opened before each transaction.
test('the database file deleted under a running engine: its final row cannot be written, done rejects (TurnOutcomeUnknownError, cause StorageError)', async () => {
  const file = tempDbPath()
  cleanup.push(() => fs.rmSync(path.dirname(file), { recursive: true, force: true }))
  await open(file)
  slowAnswer(10)
  const session = await engine!.createSession()
  const turn = engine!.prompt(session.id, 'delete')
  await waitFor((e) => e.type === 'part.delta')
  for (const suffix of ['', '-wal', '-shm']) fs.rmSync(file + suffix, { force: true })
  expect((await outcomeUnknown(turn)).cause.message).toMatch(/deleted or replaced/)
})
