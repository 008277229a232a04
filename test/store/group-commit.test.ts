/**
 * Group commit on a real SQLite file: transactions asked for together share one commit, yet
 * each succeeds or fails alone, and each settles only once its writes are durable.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import Database from 'better-sqlite3'
import { Kysely, SqliteDialect, sql } from 'kysely'
import { GroupCommit, kyselyBatches, type BatchOpener } from '../../src/store/group-commit'
import { directBatches, directSqliteDialect } from '../../src/store/sqlite/direct-statements'
import { cachingStatements } from '../../src/store/sqlite/statement-cache'
import type { SqliteDriverStatement } from '../../src/store/sqlite/sqlite-driver'
import { committedIds } from '../support/committed-ids'
import { sqliteOnly } from '../support/harness'

interface DB {
  items: { id: string }
}

let dir: string
let file: string
let db: Kysely<DB>
let statements: string[]
/** How each shared transaction is begun: Kysely's controlled transaction, or on the handle directly (turnchart's own connection). */
let batches: () => BatchOpener<DB>

/** Opens the file with `opener`'s way of beginning transactions; `statements` gets the SQL run (begin and commit included). */
async function open(opener: 'kysely' | 'direct') {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'turnchart-group-'))
  file = path.join(dir, 'g.db')
  const handle = new Database(file)
  handle.pragma('journal_mode = WAL')
  statements = []
  if (opener === 'kysely') {
    db = new Kysely<DB>({ dialect: new SqliteDialect({ database: handle }), log: (event) => void statements.push(event.query.sql) })
    batches = () => kyselyBatches(db)
  } else {
    const cached = cachingStatements(handle)
    // Every statement, Kysely's and the direct ones, is prepared here (the cache below keeps
    // them, and the direct ones are prepared once): each run of one is logged.
    const logged = { prepare: (text: string) => loggedRuns(text, cached.prepare(text)), close: () => cached.close() }
    const dialect = directSqliteDialect(logged)
    db = new Kysely<DB>({ dialect })
    batches = () => directBatches(db, dialect, logged)
  }
  await sql`create table items (id text primary key)`.execute(db)
  statements = []
}

/** `statement`, with each of its runs logged in `statements`. */
function loggedRuns(text: string, statement: SqliteDriverStatement): SqliteDriverStatement {
  const logged = <A extends unknown[], R>(run: (...args: A) => R) => (...args: A): R => (statements.push(text), run(...args))
  return Object.assign(Object.create(statement) as SqliteDriverStatement, {
    run: logged(statement.run.bind(statement)),
    all: logged(statement.all.bind(statement)),
    iterate: logged(statement.iterate.bind(statement)),
  })
}

describe.each(['kysely', 'direct'] as const)('group commit, transactions begun by %s', (opener) => {
beforeEach(() => open(opener))

afterEach(async () => {
  await db.destroy()
  fs.rmSync(dir, { recursive: true, force: true })
})

/** The ids another connection sees: what is committed. */
const committed = () => committedIds(file)

const insert = (id: string) => (trx: Kysely<DB>) => trx.insertInto('items').values({ id }).execute()

sqliteOnly('runs the transactions asked for together in one transaction, and each resolves once committed', async () => {
  const group = new GroupCommit(batches())
  const seen: string[][] = []
  const runs = ['a', 'b', 'c'].map((id) => group.run(insert(id)).then(() => seen.push(committed())))
  await Promise.all(runs)
  expect(statements.filter((s) => s === 'begin')).toHaveLength(1)
  expect(statements.filter((s) => s === 'commit')).toHaveLength(1)
  // Every promise settled after the commit: each saw all three rows in the file.
  expect(seen).toEqual([['a', 'b', 'c'], ['a', 'b', 'c'], ['a', 'b', 'c']])
})

sqliteOnly('rolls back only the transaction that failed; the others commit', async () => {
  const group = new GroupCommit(batches())
  const failing = group.run(async (trx) => {
    await insert('b')(trx)
    throw new Error('the work failed after its write')
  })
  const results = await Promise.allSettled([group.run(insert('a')), failing, group.run(insert('c'))])
  expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled'])
  expect((results[1] as PromiseRejectedResult).reason).toMatchObject({ message: 'the work failed after its write' })
  expect(committed()).toEqual(['a', 'c'])
})

sqliteOnly('when SQLite ends the shared transaction itself, what ran in it fails and what did not run yet runs in the next', async () => {
  const group = new GroupCommit(batches())
  const results = await Promise.allSettled([
    group.run(insert('a')),
    // As SQLite does on a full disk or an I/O error: the whole transaction is gone.
    group.run(async (trx) => {
      await sql`rollback`.execute(trx)
      throw new Error('disk full')
    }),
    group.run(insert('c')),
  ])
  expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected', 'fulfilled'])
  expect(committed()).toEqual(['c'])
})

sqliteOnly('a transaction asked for while one runs joins the next batch', async () => {
  const group = new GroupCommit(batches())
  let second: Promise<unknown> | undefined
  await group.run(async (trx) => {
    second = group.run(insert('b'))
    await insert('a')(trx)
  })
  await second
  expect(committed()).toEqual(['a', 'b'])
  expect(statements.filter((s) => s === 'commit')).toHaveLength(2)
})
})
