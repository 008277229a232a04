/**
 * Opening the two dialects: migrations on the dialect of this run, the option errors of
 * PostgreSQL URLs, and what only PostgreSQL has: URLs with a schema, concurrent migrations
 * under the advisory lock, a caller's Kysely instance without type parsers, the "C" collation
 * of ids, no secrets stored. What the store does once open is the conformance suite's
 * (test/store/conformance), on memory, SQLite and PostgreSQL alike.
 */
import { Kysely, PostgresDialect, type LogEvent } from 'kysely'
import { Client, Pool } from 'pg'
import { createEngine, InvalidOptionError } from '../../src'
import { isOpenedDatabase } from '../../src/store/backend'
import { openDatabase } from '../../src/store/backends/open-database'
import { migrate, migrations } from '../../src/store/migrations'
import { pgLoader } from '../../src/store/postgres/open-postgres'
import { splitSearchPath } from '../../src/store/postgres/postgres-dialect'
import type { TurnchartDatabase } from '../../src/store/schema'
import { startScriptedServer, type ScriptedServer } from '../../src/testing'
import { dropSchemas, freshDatabase, freshSchemaName, modelFor, pgBaseUrl, postgresOnly, testDialect, withParams } from '../support/harness'

/** A SQL database opened by its backend, with the backend's name. */
function openSql(database: string) {
  const { backend, opened } = openDatabase(database)
  if (!isOpenedDatabase(opened)) throw new Error(`${database} opened no SQL database`)
  return { ...opened, backend: backend.name }
}

const cleanups: Array<() => Promise<unknown>> = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

/** A PostgreSQL client whose search_path is `schema`, closed after the test. */
async function pgClient(schema: string): Promise<Client> {
  const client = new Client({ connectionString: pgBaseUrl, options: `-c search_path=${schema}` })
  await client.connect()
  cleanups.push(() => client.end())
  return client
}

// The store's round trips (bigint times, JSON columns, id order, upserts, the transition
// sequence, a failing transaction) are the conformance suite's, on every store: test/store/conformance.
test(`migrate applies every migration once on ${testDialect}`, async () => {
  const fresh = freshDatabase()
  cleanups.push(() => fresh.drop())
  const opened = openSql(fresh.database)
  cleanups.push(() => opened.close())
  expect(opened.backend).toBe(testDialect)
  expect(await migrate(opened.db, opened.sql)).toEqual(migrations.map((m) => m.name))
  expect(await migrate(opened.db, opened.sql)).toEqual([])
})

test("without pg installed, a PostgreSQL URL fails naming the database option and 'npm install pg'", () => {
  const load = jest.spyOn(pgLoader, 'load').mockImplementation(() => {
    throw Object.assign(new Error("Cannot find module 'pg'"), { code: 'MODULE_NOT_FOUND' })
  })
  try {
    let error: unknown
    try {
      openDatabase('postgres://app:hunter2@db.internal/app')
    } catch (e) {
      error = e
    }
    expect(InvalidOptionError.isInstance(error)).toBe(true)
    expect(error).toMatchObject({ option: 'database' })
    expect((error as Error).message).toContain('npm install pg')
    expect((error as Error).message).not.toContain('hunter2')
  } finally {
    load.mockRestore()
  }
})

test.each([
  ['postgres://localhost/db?schema=Bad-Name', 'schema'],
  ['postgresql://localhost/db?pool_max=0', 'pool_max'],
])('%s is refused naming the database option', (url, parameter) => {
  expect(() => openDatabase(url)).toThrow(InvalidOptionError)
  expect(() => openDatabase(url)).toThrow(new RegExp(`invalid option database: .*${parameter}`))
})

test('search_path parsing', () => {
  expect(splitSearchPath('"$user", public')).toEqual(['$user', 'public'])
  expect(splitSearchPath('Agent,"Mixed Case","a""b"')).toEqual(['agent', 'Mixed Case', 'a"b'])
  expect(splitSearchPath('')).toEqual([])
})

describe('PostgreSQL', () => {
  let server: ScriptedServer
  beforeAll(async () => {
    if (testDialect === 'postgres') server = await startScriptedServer()
  })
  afterAll(async () => {
    await server?.close()
  })

  postgresOnly('engines created at the same time on a fresh schema migrate once', async () => {
    const schema = freshSchemaName()
    cleanups.push(() => dropSchemas(schema))
    const url = withParams(pgBaseUrl, { schema })
    const opened = [openSql(url), openSql(url), openSql(url)]
    cleanups.push(() => Promise.all(opened.map((o) => o.close())))
    const applied = await Promise.all(opened.map((o) => migrate(o.db, o.sql)))
    expect(applied.map((a) => a.length).sort()).toEqual([0, 0, migrations.length])
    const engines = await Promise.all([1, 2, 3].map(() => createEngine({ database: url, model: modelFor(server) })))
    await Promise.all(engines.map((e) => e.close()))
    const client = await pgClient(schema)
    const { rows } = await client.query('select name from turnchart_migrations order by name')
    expect(rows).toEqual(migrations.map((m) => ({ name: m.name })))
    const tables = await client.query('select table_name from information_schema.tables where table_schema = $1 order by 1', [schema])
    expect(tables.rows.map((r) => r.table_name)).toEqual([
      'turnchart_circuits',
      'turnchart_controls',
      'turnchart_messages',
      'turnchart_migrations',
      'turnchart_parts',
      'turnchart_queue',
      'turnchart_schedules',
      'turnchart_sessions',
      'turnchart_slots',
      'turnchart_transitions',
      'turnchart_tree_spending',
      'turnchart_turns',
      // PostgreSQL only: the sessions watched from other engines (their writes notify).
      'turnchart_watches',
    ])
  })

  postgresOnly('ids use the "C" collation, so id order is creation order in any locale', async () => {
    const fresh = freshDatabase()
    cleanups.push(() => fresh.drop())
    const engine = await createEngine({ database: fresh.database, model: modelFor(server) })
    await engine.close()
    const client = await pgClient(fresh.schema!)
    const { rows } = await client.query(
      "select table_name, column_name, collation_name from information_schema.columns where table_schema = $1 and column_name in ('id', 'session_id', 'message_id', 'turn_id') and data_type = 'text' order by 1, 2",
      [fresh.schema],
    )
    // (text ids only: turnchart_slots' one row is keyed by the integer 1, not an id)
    expect(rows.length).toBeGreaterThanOrEqual(9)
    for (const row of rows) expect(row).toMatchObject({ collation_name: 'C' })
  })

  postgresOnly('options=-c search_path=... in the URL puts the tables in that schema too', async () => {
    const schema = freshSchemaName()
    cleanups.push(() => dropSchemas(schema))
    const engine = await createEngine({ database: withParams(pgBaseUrl, { options: `-c search_path=${schema}` }), model: modelFor(server) })
    server.text('hi')
    const session = await engine.createSession()
    expect((await engine.prompt(session.id, 'x').done).outcome).toBe('completed')
    await engine.close()
    const client = await pgClient(schema)
    expect((await client.query('select count(*)::int as n from turnchart_messages')).rows).toEqual([{ n: 2 }])
  })

  postgresOnly("a caller's Kysely instance (no int8 parser): numbers come back as numbers, text is written at boundaries, the pool stays open", async () => {
    const schema = freshSchemaName()
    cleanups.push(() => dropSchemas(schema))
    const writes: string[] = []
    const pool = new Pool({ connectionString: pgBaseUrl, options: `-c search_path=${schema}`, max: 4 })
    const db = new Kysely<TurnchartDatabase>({
      dialect: new PostgresDialect({ pool }),
      log: (event: LogEvent) => {
        if (event.level === 'query' && /turnchart_parts/.test(event.query.sql) && /^insert/i.test(event.query.sql)) writes.push(event.query.sql)
      },
    })
    cleanups.push(() => db.destroy())
    // the schema does not exist yet: the migration creates it (first of search_path)
    const engine = await createEngine({ database: db, model: modelFor(server), flushIntervalMs: 10_000 })
    const deltas = 500
    server.text('x'.repeat(deltas), { deltas })
    const session = await engine.createSession()
    const turn = engine.prompt(session.id, 'hi')
    expect((await turn.done).outcome).toBe('completed')
    expect(writes.length).toBeLessThan(10)
    const messages = await engine.messages(session.id)
    expect(messages[1].parts.find((p) => p.type === 'text')).toMatchObject({ text: 'x'.repeat(deltas) })
    expect(typeof messages[0].info.time.created).toBe('number')
    const log = await engine.transitions(turn.id)
    expect(log.map((t) => [t.seq, t.to])).toEqual([[1, 'step-gate'], [2, 'streaming'], [3, 'completed']])
    expect(typeof log[0].time).toBe('number')
    const record = await engine.getTurn(turn.id)
    expect(typeof record!.time.created).toBe('number')
    expect(typeof (await engine.getSession(session.id))!.time.updated).toBe('number')
    await engine.close()
    // the caller's instance is still usable
    expect(await db.selectFrom('turnchart_sessions').select('id').execute()).toEqual([{ id: session.id }])
  })

  postgresOnly('nothing secret is stored: no API key, no request header, no request URL', async () => {
    const fresh = freshDatabase()
    cleanups.push(() => fresh.drop())
    const engine = await createEngine({ database: fresh.database, model: modelFor(server) })
    server.error(400, { error: { message: 'bad request' } }, { 'set-cookie': 'session=secret-cookie', 'x-request-id': 'req_1' })
    const session = await engine.createSession()
    expect((await engine.prompt(session.id, 'hi').done).outcome).toBe('failed')
    await engine.close()
    const client = await pgClient(fresh.schema!)
    let dump = ''
    for (const table of ['turnchart_sessions', 'turnchart_messages', 'turnchart_parts', 'turnchart_turns', 'turnchart_transitions']) {
      dump += JSON.stringify((await client.query(`select * from ${table}`)).rows)
    }
    expect(dump).toContain('bad request')
    expect(dump).not.toContain('test-key')
    expect(dump.toLowerCase()).not.toContain('authorization')
    expect(dump).not.toContain('secret-cookie')
    expect(dump).not.toContain(server.url)
  })
})
