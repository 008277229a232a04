/**
 * Storage faults told straight (issue 39, item 2), on both databases with real faults: a
 * prompt whose own transaction fails (PostgreSQL: its connection killed by the server; SQLite:
 * the disk full) rejects with a `StorageError` naming the operation, the driver's error as its
 * `cause`; a failed usage write does not make `done` report zero tokens; and, on PostgreSQL,
 * backends killed through a turn's final write: the engine waits them out and writes the row
 * once (issue 51, `storage.outageMs`); without waiting, `done` never says `failed` for a turn
 * that later runs: it is `failed` with the row final (nothing runs it again) or rejected with
 * `TurnOutcomeUnknownError`, and recovery then ends it once. Riding an outage out (issue 51): a
 * streaming step's part writes and a prompt's transaction written again; a takeover during the
 * outage wins and the waiting engine lets go.
 */
import Database from 'better-sqlite3'
import { tool } from 'ai'
import { Kysely, PostgresDialect, SqliteDialect } from 'kysely'
import { z } from 'zod'
import { createEngine, StorageError, TurnOutcomeUnknownError, type Engine, type EngineOptions } from '../../src'
import { startScriptedServer, type ScriptedServer } from '../../src/testing'
import { dropSchemas, freshSchemaName, modelFor, pgBaseUrl, tempDbPath } from '../support/harness'
import { recordEvents } from '../support/event-log'
import { testOn } from '../support/requires'

type Dialect = 'sqlite' | 'postgres'

/** A write statement as the driver gets it. */
interface Statement {
  sql: string
  params: readonly unknown[]
}

/**
 * Makes the write statements `match` picks fail inside the engine's transaction, while armed:
 * on PostgreSQL the server ends the statement's own connection (the statement replaced by
 * `pg_terminate_backend(pg_backend_pid())`: the driver's error 57P01); on SQLite it throws the
 * driver's busy error (`SQLITE_BUSY`).
 */
class WriteFault {
  armed = false
  hits = 0
  constructor(readonly match: (statement: Statement) => boolean) {}

  /** Whether `statement` fails now (counted). */
  fails(statement: Statement): boolean {
    if (!this.armed || !this.match(statement)) return false
    this.hits++
    return true
  }
}

const turnInsert = ({ sql }: Statement) => /^insert into "turnchart_turns"/i.test(sql)
/** An update of the turn row that gives it an outcome (a turn's final row). */
const finalRow = ({ sql, params }: Statement) => /^update "turnchart_turns" set .*"outcome"/i.test(sql) && params.flat().some((p) => p === 'completed' || p === 'failed' || p === 'aborted')

interface Fixture {
  db: Kysely<any>
  /** A URL of the same database (a second engine), and the SQLite handle. */
  url: string
  handle?: Database.Database
  drop(): Promise<void>
}

async function fixture(dialect: Dialect, fault: WriteFault): Promise<Fixture> {
  if (dialect === 'postgres') {
    const schema = freshSchemaName()
    const pg = await import('pg')
    const admin = new pg.Client({ connectionString: pgBaseUrl })
    await admin.connect()
    await admin.query(`create schema "${schema}"`)
    await admin.end()
    const pool = new pg.Pool({ connectionString: pgBaseUrl, options: `-c search_path=${schema}`, max: 4 })
    pool.on('error', () => {}) // a backend the test ended
    pool.on('connect', (client) => {
      client.on('error', () => {})
      const query = client.query.bind(client) as (text: string, values?: unknown[]) => Promise<unknown>
      ;(client as unknown as { query: typeof query }).query = (text: string, values?: unknown[]) => {
        if (typeof text !== 'string') return query(text, values)
        return fault.fails({ sql: text, params: values ?? [] }) ? query('select pg_terminate_backend(pg_backend_pid())') : query(text, values)
      }
    })
    const db = new Kysely<any>({ dialect: new PostgresDialect({ pool }) })
    const url = new URL(pgBaseUrl)
    url.searchParams.set('schema', schema)
    return { db, url: url.toString(), drop: async () => (await db.destroy(), await dropSchemas(schema)) }
  }
  const file = tempDbPath()
  const handle = new Database(file)
  handle.pragma('journal_mode = WAL')
  handle.pragma('foreign_keys = ON')
  // The statements better-sqlite3 prepares: a failing one throws when it runs.
  const prepare = handle.prepare.bind(handle)
  ;(handle as unknown as { prepare: (text: string) => unknown }).prepare = (text: string) => {
    const statement = prepare(text)
    return new Proxy(statement, {
      get(target, key) {
        const value = Reflect.get(target, key, target) as unknown
        if (typeof value !== 'function') return value
        return (...args: unknown[]) => {
          // (as the driver says a lock held past the busy timeout: a failure that passes)
          if ((key === 'run' || key === 'all') && fault.fails({ sql: text, params: args })) throw Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' })
          return (value as (...a: unknown[]) => unknown).apply(target, args)
        }
      },
    })
  }
  const db = new Kysely<any>({ dialect: new SqliteDialect({ database: handle }) })
  return { db, url: file, handle, drop: () => db.destroy() }
}

let server: ScriptedServer
const cleanup: Array<() => Promise<unknown>> = []
beforeEach(async () => {
  server = await startScriptedServer()
})
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn().catch(() => undefined)
  await server.close()
})

async function engineOn(database: Kysely<any> | string, options: Partial<EngineOptions> = {}): Promise<Engine> {
  const engine = await createEngine({
    database,
    model: modelFor(server),
    flushIntervalMs: 10,
    leaseMs: 60_000,
    recovery: { onOpen: false, intervalMs: 0 },
    ...options,
  })
  cleanup.push(() => engine.close())
  return engine
}

describe.each(['sqlite', 'postgres'] as const)('%s', (dialect) => {
  const it = testOn(dialect)

  it('a prompt whose own transaction fails past storage.outageMs rejects with a StorageError naming it, the driver error as cause; nothing is stored; the next prompt runs', async () => {
    // PostgreSQL: the server ends the connection of the prompt's transaction at its turn row.
    const fault = new WriteFault(turnInsert)
    const f = await fixture(dialect, fault)
    cleanup.push(() => f.drop())
    const engine = await engineOn(f.db, { storage: { outageMs: 300 } })
    const session = await engine.createSession()
    let turn
    if (dialect === 'postgres') {
      fault.armed = true
      turn = engine.prompt(session.id, 'hello')
    } else {
      // SQLite: the disk full (no page left for the prompt's rows).
      f.handle!.pragma(`max_page_count = ${f.handle!.pragma('page_count', { simple: true }) as number}`)
      turn = engine.prompt(session.id, 'x'.repeat(200_000))
    }
    const error = await turn.done.then(
      () => null,
      (e: unknown) => e,
    )
    expect(StorageError.isInstance(error)).toBe(true)
    const storage = error as StorageError & { cause: { code?: string } }
    expect(storage.operation).toBe('storing the prompt')
    expect(storage.cause.code).toBe(dialect === 'postgres' ? '57P01' : 'SQLITE_FULL')
    expect(await engine.getTurn(turn.id)).toBeUndefined()
    expect(engine.status(session.id)).toEqual({ type: 'idle' })

    fault.armed = false
    f.handle?.pragma('max_page_count = 1073741823')
    server.text('fine')
    expect((await engine.prompt(session.id, 'again').done).outcome).toBe('completed')
  })

  it('a prompt whose own transaction fails twice for a reason that passes is stored on the third try (storage.outageMs): one prompt, one turn, completed', async () => {
    let remaining = 2
    const fault = new WriteFault((statement) => turnInsert(statement) && remaining-- > 0)
    const f = await fixture(dialect, fault)
    cleanup.push(() => f.drop())
    const engine = await engineOn(f.db, { storage: { outageMs: 10_000 } })
    const session = await engine.createSession()
    server.text('stored at last')
    fault.armed = true
    const turn = engine.prompt(session.id, 'hello')
    expect((await turn.done).outcome).toBe('completed')
    expect(fault.hits).toBe(2)
    const messages = await engine.messages(session.id)
    expect(messages.map((m) => m.info.role)).toEqual(['user', 'assistant'])
  })

  it("the engine's own calls ride an outage out: createSession and a read through failures that pass; past storage.outageMs a StorageError naming the call", async () => {
    let remaining = 2
    const fault = new WriteFault(({ sql }) => /^(insert into "turnchart_sessions"|select .* from "turnchart_turns")/i.test(sql) && remaining-- > 0)
    const f = await fixture(dialect, fault)
    cleanup.push(() => f.drop())
    const engine = await engineOn(f.db, { storage: { outageMs: 10_000 } })
    fault.armed = true
    const session = await engine.createSession({ title: 'through the outage' })
    expect(fault.hits).toBe(2)
    expect((await engine.listSessions()).map((s) => s.id)).toEqual([session.id])
    remaining = 2
    expect(await engine.getTurn('trn_none')).toBeUndefined()
    expect(fault.hits).toBe(4)
    remaining = Infinity
    const short = await engineOn(f.db, { storage: { outageMs: 200 } })
    const error = await short.createSession().catch((e: unknown) => e)
    expect(error).toMatchObject({ name: 'StorageError', operation: 'create a session' })
  })

  it("a streaming step's part writes fail twice for a reason that passes (PostgreSQL: backends killed; SQLite: busy): the turn completes, the model asked once, its text whole", async () => {
    let remaining = 2
    const fault = new WriteFault(({ sql }) => /^insert into "turnchart_parts"/i.test(sql) && remaining-- > 0)
    const f = await fixture(dialect, fault)
    cleanup.push(() => f.drop())
    const engine = await engineOn(f.db, { storage: { outageMs: 10_000 } })
    const seen = recordEvents(engine)
    const session = await engine.createSession()
    const chunks = Array.from({ length: 10 }, (_, i) => `d${i} `)
    server.push({ type: 'stream', delayMs: 20, chunks: chunks.map((text) => ({ text })) })
    const turn = engine.prompt(session.id, 'go')
    await seen.waitFor((e) => e.type === 'part.delta')
    fault.armed = true
    expect((await turn.done).outcome).toBe('completed')
    expect(fault.hits).toBe(2)
    expect(server.requests).toHaveLength(1)
    const texts = (await engine.messages(session.id)).filter((m) => m.info.role === 'assistant').flatMap((m) => m.parts).filter((p) => p.type === 'text')
    expect(texts.map((p) => (p as { text: string }).text)).toEqual([chunks.join('')])
    const log = await engine.transitions(turn.id)
    expect(new Set(log.map((row) => row.seq)).size).toBe(log.length)
    const [resumed] = seen.events.filter((e) => e.type === 'storage.resumed')
    expect(resumed).toMatchObject({ gaveUp: false, waitedMs: expect.any(Number) })
    // The wait is in the log, on the row written after it (turnchart show and the viewer read it there).
    const waited = log.filter((row) => row.storageWaits)
    expect(waited).toHaveLength(1)
    expect(waited[0]!.storageWaits).toEqual([{ operation: (resumed as { operation: string }).operation, waitedMs: (resumed as { waitedMs: number }).waitedMs }])
  })

  it("a turn resumed in another engine loads its run tree through an outage: the reads of its first step gate fail twice for a reason that passes, and the turn completes (the fleet bench saw it fail at the gate)", async () => {
    let remaining = 2
    // The resumed tree's load: the session's turns' usage (what the tree spent so far).
    const fault = new WriteFault(({ sql }) => /^select "id", "usage" from "turnchart_turns"/i.test(sql) && remaining-- > 0)
    const f = await fixture(dialect, fault)
    cleanup.push(() => f.drop())
    let started!: () => void
    const running = new Promise<void>((resolve) => (started = resolve))
    let finish!: () => void
    const finished = new Promise<void>((resolve) => (finish = resolve))
    const slow = tool({ description: 'waits', inputSchema: z.object({}), execute: async () => (started(), await finished, 'done') })
    const first = await engineOn(f.db, { tools: { slow } })
    const session = await first.createSession()
    server.tool('slow', {})
    server.text('answered in the second engine')
    const turn = first.prompt(session.id, 'go')
    turn.done.catch(() => undefined)
    await running
    // Handed off: the turn holds at its next step gate, released, once its call has its result.
    const closing = first.close({ handoff: true })
    finish()
    await closing
    const second = await engineOn(f.db, { tools: { slow }, storage: { outageMs: 10_000 } })
    fault.armed = true
    const [resumed] = await second.recover()
    expect(resumed!.id).toBe(turn.id)
    expect((await resumed!.done).outcome).toBe('completed')
    expect(fault.hits).toBe(2)
    expect(server.requests).toHaveLength(2)
  })

  it('a takeover during the outage wins: the waiting engine\'s write is refused by the fence and it lets go; no row twice, the turn completed once', async () => {
    // Engine A loses its database (every statement of its own connection fails for a reason that
    // passes) mid-stream and waits; its lease runs out; engine B, on a connection of its own,
    // takes the turn over and completes it. When A's database answers again, A's retried write
    // meets the fence: A lets go, writing nothing.
    const fault = new WriteFault(() => true)
    const f = await fixture(dialect, fault)
    cleanup.push(() => f.drop())
    const waiting = await engineOn(f.db, { leaseMs: 600, storage: { outageMs: 60_000 } })
    const seenByA = recordEvents(waiting)
    const session = await waiting.createSession()
    server.push({ type: 'stream', delayMs: 20, chunks: Array.from({ length: 10 }, (_, i) => ({ text: `a${i} ` })) })
    server.text('taken over')
    const turn = waiting.prompt(session.id, 'go')
    const outcomeOfA = turn.done.then(
      (r) => r.outcome,
      (e: unknown) => e,
    )
    await seenByA.waitFor((e) => e.type === 'part.delta')
    fault.armed = true
    await seenByA.waitFor((e) => e.type === 'storage.waiting')

    const other = await engineOn(f.url, { leaseMs: 600, recovery: { onOpen: false, intervalMs: 100 } })
    const seenByB = recordEvents(other)
    await seenByB.waitFor((e) => e.type === 'turn.transition' && e.turnId === turn.id && e.to === 'completed')
    fault.armed = false
    expect(await outcomeOfA).toMatchObject({ name: 'TurnOwnershipLostError', turnId: turn.id })
    expect(seenByA.events.filter((e) => e.type === 'storage.resumed')).toMatchObject([{ gaveUp: true }])

    const log = await other.transitions(turn.id)
    expect(new Set(log.map((row) => row.seq)).size).toBe(log.length)
    expect(log.filter((row) => row.to === 'completed')).toHaveLength(1)
    expect(await other.getTurn(turn.id)).toMatchObject({ outcome: 'completed' })
    const answers = (await other.messages(session.id)).filter((m) => m.info.role === 'assistant')
    expect(answers.flatMap((m) => m.parts).filter((p) => p.type === 'text').map((p) => (p as { text: string }).text)).toEqual(['taken over'])
    expect(server.requests).toHaveLength(2)
  })

  it("a turn's usage is written by its final row's update (no write of its own that could fail alone): the row has it once done settles", async () => {
    const statements: Statement[] = []
    const fault = new WriteFault((statement) => (statements.push(statement), false))
    fault.armed = true
    const f = await fixture(dialect, fault)
    cleanup.push(() => f.drop())
    const engine = await engineOn(f.db)
    const session = await engine.createSession()
    server.text('counted', { usage: { input: 10, output: 5 } })
    const result = await engine.prompt(session.id, 'count').done
    expect(result.usage.tokens).toMatchObject({ input: 10, output: 5 })
    const finalRows = statements.filter(finalRow)
    expect(finalRows).toHaveLength(1)
    expect(finalRows[0].sql).toMatch(/"usage" = /)
    expect(statements.filter(({ sql }) => /^update "turnchart_turns" set "usage"/i.test(sql))).toEqual([])
    const row = await f.db.selectFrom('turnchart_turns').select('usage').where('id', '=', result.turnId).executeTakeFirstOrThrow()
    expect(JSON.parse(row.usage)).toEqual(result.usage)
  })
})

describe('postgres: backends killed through turns\' final writes', () => {
  testOn('postgres')('the engine rides the kills out (storage.outageMs): each turn completes, its final row written once, nothing left for recovery', async () => {
    const cases = [1, 2, 1, 2]
    let remaining = 0
    const fault = new WriteFault((statement) => finalRow(statement) && remaining-- > 0)
    fault.armed = true
    const f = await fixture('postgres', fault)
    cleanup.push(() => f.drop())
    const engine = await engineOn(f.db, { storage: { outageMs: 10_000 } })
    const turnIds: string[] = []
    for (const kills of cases) {
      const session = await engine.createSession()
      server.text('the answer')
      remaining = kills
      const turn = engine.prompt(session.id, 'go')
      expect((await turn.done).outcome).toBe('completed')
      turnIds.push(turn.id)
    }
    expect(fault.hits).toBe(6)
    for (const turnId of turnIds) {
      const log = await engine.transitions(turnId)
      expect(new Set(log.map((row) => row.seq)).size).toBe(log.length)
      expect(log.filter((row) => row.to === 'completed')).toHaveLength(1)
    }
    await engine.close()
    const other = await engineOn(f.url)
    expect(await other.recover()).toEqual([])
  })

  testOn('postgres')("backends killed while a non-idempotent tool's result is written: the engine that holds the result writes it once the database answers; the tool ran once, nothing in doubt", async () => {
    let remaining = 2
    // Every write that carries the tool's result (a part flush, or the row that ends the tools).
    const fault = new WriteFault(({ params }) => params.some((p) => typeof p === 'string' && p.includes('charged-once')) && remaining-- > 0)
    const f = await fixture('postgres', fault)
    cleanup.push(() => f.drop())
    let runs = 0
    const charge = tool({ description: 'charges a card (not idempotent)', inputSchema: z.object({ amount: z.number() }), execute: async () => (runs++, 'charged-once') })
    const engine = await engineOn(f.db, { storage: { outageMs: 10_000 }, tools: { charge } })
    const session = await engine.createSession()
    server.tool('charge', { amount: 5 }).text('paid')
    fault.armed = true
    const turn = engine.prompt(session.id, 'pay')
    expect((await turn.done).outcome).toBe('completed')
    expect(fault.hits).toBe(2)
    expect(runs).toBe(1)
    const log = await engine.transitions(turn.id)
    expect(log.map((row) => row.to)).not.toContain('call-in-doubt')
    expect(new Set(log.map((row) => row.seq)).size).toBe(log.length)
    const parts = (await engine.messages(session.id)).flatMap((m) => m.parts)
    expect(parts.filter((p) => p.type === 'tool')).toMatchObject([{ tool: 'charge', state: { status: 'completed', output: 'charged-once' } }])
  })

  testOn('postgres')('without waiting (storage.outageMs 0), done never says failed for a turn that later runs: it is failed and final, or TurnOutcomeUnknownError and recovery ends it once', async () => {
    // Every final row of a turn fails (its connection killed) for the first `kills` attempts:
    // 1: the completed row is lost, the failure's own row lands (`failed`, final);
    // 2: both are lost (the outcome is not known: recovery decides).
    const cases = [1, 2, 1, 2]
    let remaining = 0
    const fault = new WriteFault((statement) => finalRow(statement) && remaining-- > 0)
    fault.armed = true
    const f = await fixture('postgres', fault)
    cleanup.push(() => f.drop())
    const engine = await engineOn(f.db, { storage: { outageMs: 0 } })
    const reports: Array<{ turnId: string; said: string }> = []
    for (const kills of cases) {
      const session = await engine.createSession()
      server.text('the answer')
      remaining = kills
      const turn = engine.prompt(session.id, 'go')
      const said = await turn.done.then(
        (r) => r.outcome,
        (e: unknown) => (TurnOutcomeUnknownError.isInstance(e) ? 'unknown' : `rejected ${String(e)}`),
      )
      reports.push({ turnId: turn.id, said })
    }
    expect(reports.map((r) => r.said)).toEqual(['failed', 'unknown', 'failed', 'unknown'])
    expect(fault.hits).toBe(6)

    // The engine closes (its claims released); another recovers what is open: the unknown turns only, each once.
    await engine.close()
    for (let i = 0; i < 4; i++) server.text('recovered')
    const other = await engineOn(f.url)
    const resumed = await other.recover()
    expect(resumed.map((t) => t.id).sort()).toEqual(reports.filter((r) => r.said === 'unknown').map((r) => r.turnId).sort())
    for (const turn of resumed) expect((await turn.done).outcome).toBe('completed')
    for (const { turnId, said } of reports) {
      const record = await other.getTurn(turnId)
      if (said === 'failed') {
        // Failed is final: its log ends at its failure, nothing ran it again.
        expect(record?.outcome).toBe('failed')
        expect((await other.transitions(turnId)).at(-1)).toMatchObject({ event: 'turn.fail', to: 'failed' })
      } else {
        expect(record?.outcome).toBe('completed')
      }
    }
  })

  testOn('postgres')("recovery that meets a killed connection lets go of the turn, never ends it failed; the next pass resumes it", async () => {
    const fault = new WriteFault(({ sql }) => /^insert into "turnchart_transitions"/i.test(sql))
    const f = await fixture('postgres', fault)
    cleanup.push(() => f.drop())
    // A turn left open mid-stream by an engine that closed (released: any engine may take it).
    const first = await engineOn(f.url)
    const session = await first.createSession()
    server.push({ type: 'stream', delayMs: 30, chunks: Array.from({ length: 20 }, (_, i) => ({ text: `p${i} ` })) })
    const turn = first.prompt(session.id, 'go')
    await new Promise<void>((resolve) => {
      const off = first.subscribe((e) => e.type === 'part.delta' && (off(), resolve()))
    })
    await first.close()
    await turn.done.catch(() => undefined)

    const engine = await engineOn(f.db)
    fault.armed = true
    expect(await engine.recover()).toEqual([]) // its crash row's connection killed: let go of
    expect(fault.hits).toBe(1)
    expect(await engine.getTurn(turn.id)).toMatchObject({ outcome: null, owner: null })
    fault.armed = false
    server.text('resumed')
    const [resumed] = await engine.recover()
    expect(resumed.id).toBe(turn.id)
    expect((await resumed.done).outcome).toBe('completed')
  })
})
