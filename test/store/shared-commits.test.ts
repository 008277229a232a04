/**
 * Group commit on PostgreSQL for the transactions that allow it (`{ shared: true }`: streamed
 * text's interval flushes). On real PostgreSQL: works asked for together share one transaction,
 * one that fails (PostgreSQL aborts the transaction at its error) is rolled back to its savepoint
 * alone and the others commit; and an engine whose turns stream at once writes their flushes in
 * a commit per tick, not one per turn, while its transition rows commit on their own.
 */
import { Kysely, PostgresDialect, sql } from 'kysely'
import pg from 'pg'
import { createEngine, type Engine } from '../../src'
import { GroupCommit, kyselyBatches } from '../../src/store/group-commit'
import { startScriptedServer, type ScriptedServer } from '../../src/testing'
import { dropSchemas, freshSchemaName, modelFor, pgBaseUrl, postgresOnly } from '../support/harness'

let schema: string
let pool: pg.Pool
/** Every statement the pool's connections ran, in order, with the connection's process id. */
let statements: Array<{ pid: number; text: string }>
let db: Kysely<any>
let engine: Engine | undefined
let server: ScriptedServer | undefined

beforeEach(async () => {
  schema = freshSchemaName()
  const admin = new pg.Client({ connectionString: pgBaseUrl })
  await admin.connect()
  await admin.query(`create schema "${schema}"`)
  await admin.end()
  statements = []
  pool = new pg.Pool({ connectionString: pgBaseUrl, options: `-c search_path=${schema}`, max: 8 })
  pool.on('connect', (client) => {
    const query = client.query.bind(client) as (text: unknown, values?: unknown) => Promise<unknown>
    ;(client as unknown as { query: typeof query }).query = (text, values) => {
      if (typeof text === 'string') statements.push({ pid: (client as unknown as { processID: number }).processID, text })
      return query(text, values)
    }
  })
  db = new Kysely<any>({ dialect: new PostgresDialect({ pool }) })
})

afterEach(async () => {
  await engine?.close()
  engine = undefined
  await server?.close()
  server = undefined
  await db.destroy()
  await dropSchemas(schema)
})

/** The transactions run, each as the statements between its begin and its end, by connection. */
function transactions(): Array<{ statements: string[]; end: string }> {
  const open = new Map<number, string[]>()
  const done: Array<{ statements: string[]; end: string }> = []
  for (const { pid, text } of statements) {
    const lower = text.trim().toLowerCase()
    if (lower === 'begin') open.set(pid, [])
    else if (lower === 'commit' || lower === 'rollback') {
      const body = open.get(pid)
      if (body) done.push({ statements: body, end: lower })
      open.delete(pid)
    } else open.get(pid)?.push(text)
  }
  return done
}

postgresOnly('works asked for together share one transaction; the one that fails is rolled back to its savepoint alone, the others commit', async () => {
  await sql`create table items (id text primary key)`.execute(db)
  statements = []
  const group = new GroupCommit(kyselyBatches(db), { joins: 'shared' })
  const insert = (id: string) => (trx: Kysely<any>) => trx.insertInto('items').values({ id }).execute()
  const results = await Promise.allSettled([group.run(insert('a')), group.run(insert('a')), group.run(insert('c'))])
  expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled'])
  expect((results[1] as PromiseRejectedResult).reason).toMatchObject({ code: '23505' }) // unique violation, from PostgreSQL
  expect((await db.selectFrom('items').select('id').orderBy('id').execute()).map((r) => r.id)).toEqual(['a', 'c'])
  // One transaction, one commit: the failed work's savepoint rolled back, its transaction went on.
  expect(transactions()).toEqual([{ statements: expect.arrayContaining(['rollback to savepoint turnchart_work']), end: 'commit' }])
})

postgresOnly("turns streaming at once on one engine: their interval flushes share a commit per tick; each transition row commits on its own", async () => {
  server = await startScriptedServer()
  const turns = 6
  const chunks = Array.from({ length: 16 }, (_, i) => ({ text: `word${i} ` }))
  for (let i = 0; i < turns; i++) server.push({ type: 'stream', chunks, delayMs: 25 })
  engine = await createEngine({ database: db, model: modelFor(server), flushIntervalMs: 100 })
  const sessions = await Promise.all(Array.from({ length: turns }, () => engine!.createSession()))
  statements = []
  const results = await Promise.all(sessions.map((s) => engine!.prompt(s.id, 'go').done))
  expect(results.map((r) => r.outcome)).toEqual(Array(turns).fill('completed'))
  expect(results.map((r) => r.text)).toEqual(Array(turns).fill(chunks.map((c) => c.text).join('')))

  const all = transactions()
  const writesRows = (t: { statements: string[] }) => t.statements.some((s) => /insert into "turnchart_transitions"/i.test(s))
  const flushes = all.filter((t) => !writesRows(t) && t.statements.some((s) => /insert into "turnchart_parts"/i.test(s)))
  // Each flush is a work with its own fence check (the turn row's epoch compared); a shared commit holds several.
  const works = flushes.flatMap((t) => t.statements.filter((s) => /update "turnchart_turns" set "epoch"/i.test(s)))
  expect(works.length).toBeGreaterThanOrEqual(turns * 2) // ~400 ms of streaming, a flush every 100 ms
  expect(flushes.length).toBeLessThanOrEqual(works.length / 2)
  expect(flushes.every((t) => t.end === 'commit')).toBe(true)
  // The transition rows (write-ahead: the turn waits on them) are never held in a shared batch.
  expect(all.filter(writesRows).every((t) => !t.statements.some((s) => /savepoint/i.test(s)))).toBe(true)
})
