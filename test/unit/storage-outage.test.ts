/**
 * What passes and what does not (store/outage.ts), on the drivers' real errors: SQLite busy
 * (a second connection's exclusive lock) and full (`max_page_count`), a PostgreSQL backend
 * terminated and a connection refused, against a constraint violation and a turnchart error;
 * and how `OutageRetry` waits: until the write goes through, or gives up at `outageMs` (the next
 * write then tries once).
 */
import net from 'node:net'
import Database from 'better-sqlite3'
import { StorageError, TurnOwnershipLostError } from '../../src/core/errors'
import { isPassingFailure, OutageRetry } from '../../src/store/outage'
import { pgBaseUrl, tempDbPath } from '../support/harness'
import { testOn } from '../support/requires'

/** The error `run` throws (it must throw). */
function thrown(run: () => unknown): unknown {
  try {
    run()
  } catch (error) {
    return error
  }
  throw new Error('it did not throw')
}

describe('SQLite', () => {
  const file = tempDbPath()
  const a = new Database(file)
  const b = new Database(file)
  a.exec('create table t (id integer primary key, v text)')
  b.pragma('busy_timeout = 0')
  afterAll(() => (a.close(), b.close()))

  test('busy under another connection\'s exclusive lock, and full, pass; a constraint does not', () => {
    a.exec('begin exclusive')
    const busy = thrown(() => b.prepare("insert into t (v) values ('x')").run())
    a.exec('commit')
    expect(busy).toMatchObject({ code: 'SQLITE_BUSY' })
    expect(isPassingFailure(busy)).toBe(true)
    // (as the engine reports it: wrapped, the driver's error as cause)
    expect(isPassingFailure(new StorageError('recording the transition to streaming', busy))).toBe(true)

    a.pragma(`max_page_count = ${a.pragma('page_count', { simple: true }) as number}`)
    const full = thrown(() => a.prepare('insert into t (v) values (?)').run('y'.repeat(100_000)))
    a.pragma('max_page_count = 1073741823')
    expect(full).toMatchObject({ code: 'SQLITE_FULL' })
    expect(isPassingFailure(full)).toBe(true)

    a.prepare('insert into t (id, v) values (1, ?)').run('once')
    const duplicate = thrown(() => a.prepare('insert into t (id, v) values (1, ?)').run('twice'))
    expect(duplicate).toMatchObject({ code: 'SQLITE_CONSTRAINT_PRIMARYKEY' })
    expect(isPassingFailure(duplicate)).toBe(false)
    expect(isPassingFailure(new TurnOwnershipLostError('trn_1', 'host:1:x'))).toBe(false)
  })
})

testOn('postgres')('PostgreSQL: a terminated backend and a refused connection pass; a constraint does not', async () => {
  const pg = await import('pg')
  const client = new pg.Client({ connectionString: pgBaseUrl })
  client.on('error', () => {})
  await client.connect()
  const terminated = await client.query('select pg_terminate_backend(pg_backend_pid())').catch((error: unknown) => error)
  expect(isPassingFailure(terminated)).toBe(true)
  await client.end().catch(() => undefined)

  const closed = await new Promise<number>((resolve) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo
      server.close(() => resolve(port))
    })
  })
  const refused = await new pg.Client({ connectionString: `postgres://postgres@127.0.0.1:${closed}/test` }).connect().catch((error: unknown) => error)
  expect(refused).toMatchObject({ code: 'ECONNREFUSED' })
  expect(isPassingFailure(refused)).toBe(true)

  const other = new pg.Client({ connectionString: pgBaseUrl })
  await other.connect()
  try {
    const ownFault = await other.query('select 1 from (values (1)) v(x) where x = 1/0').catch((error: unknown) => error)
    expect(ownFault).toMatchObject({ code: '22012' }) // division by zero: the statement's own fault
    expect(isPassingFailure(ownFault)).toBe(false)
  } finally {
    await other.end()
  }
})

describe('OutageRetry', () => {
  const busy = Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' })

  test('waits while the failure passes, then goes on; the watch hears the wait and its end', async () => {
    const heard: string[] = []
    const retry = new OutageRetry({ outageMs: 5000, watch: { waiting: (op) => heard.push(`waiting ${op}`), resumed: (op, o) => heard.push(`resumed ${op} ${o.gaveUp}`) } })
    let calls = 0
    const value = await retry.run('writing', async () => {
      if (++calls < 4) throw busy
      return 'written'
    })
    expect({ value, calls, heard }).toEqual({ value: 'written', calls: 4, heard: ['waiting writing', 'resumed writing false'] })
  })

  test('a failure that does not pass is thrown at once', async () => {
    const retry = new OutageRetry({ outageMs: 5000 })
    let calls = 0
    const constraint = Object.assign(new Error('UNIQUE constraint failed'), { code: 'SQLITE_CONSTRAINT_PRIMARYKEY' })
    await expect(retry.run('writing', async () => (calls++, Promise.reject(constraint)))).rejects.toBe(constraint)
    expect(calls).toBe(1)
  })

  test('gives up once the outage has lasted outageMs; the next write of that outage tries once', async () => {
    const retry = new OutageRetry({ outageMs: 200 })
    let calls = 0
    const started = Date.now()
    await expect(retry.run('writing', async () => (calls++, Promise.reject(busy)))).rejects.toBe(busy)
    expect(Date.now() - started).toBeGreaterThanOrEqual(190)
    expect(calls).toBeGreaterThan(2)
    calls = 0
    await expect(retry.run('the failure row', async () => (calls++, Promise.reject(busy)))).rejects.toBe(busy)
    expect(calls).toBe(1)
    // A write that goes through ends the outage: the next one waits again.
    await retry.run('writing', async () => 'ok')
    calls = 0
    await expect(retry.run('writing', async () => (calls++, Promise.reject(busy)))).rejects.toBe(busy)
    expect(calls).toBeGreaterThan(2)
  })
})
