/**
 * Kysely's SQLite dialect with the connection's statements at hand, for turnchart's hot writes.
 * A query goes through Kysely's executor (a new executor, its connection provider and several
 * promises per statement: ~8 µs of CPU each, measured, against ~1 µs for SQLite's own work);
 * a turn runs ~14 of them per step. Inside a transaction Kysely holds the one connection for
 * it (no other query runs until it ends), so a precompiled query (precompiled-query.ts) can run
 * its statement on the handle at once, as Kysely's own SQLite connection would, with the same
 * result; each such statement is prepared once and held by its query (not looked up in the
 * statement cache at each run). Outside a transaction, and for every query built by Kysely's
 * builder, nothing changes.
 * Group commit's own transactions (`directBatches`) begin and commit on the handle the same way.
 */
import { SqliteAdapter, SqliteDialect, Transaction, type CompiledQuery, type DatabaseConnection, type Driver, type Kysely, type QueryResult } from 'kysely'
import type { DirectAdapter, DirectStatement } from '../precompiled-query'
import type { BatchOpener } from '../group-commit'
import type { SqliteDriverStatement } from './sqlite-driver'
import type { SqliteHandle } from './statement-cache'

/** Kysely's SqliteAdapter, plus `directStatement`: a query prepared once and run on the connection now (see the module's comment). */
class DirectSqliteAdapter extends SqliteAdapter implements DirectAdapter {
  constructor(private readonly handle: SqliteHandle) {
    super()
  }

  directStatement(sql: string): DirectStatement {
    return statementOn(this.handle, sql)
  }
}

/** `sql` prepared on `handle` at its first run and reused (a statement still iterating, which these never are, is prepared anew for the run). */
function statementOn(handle: SqliteHandle, sql: string): DirectStatement {
  let prepared: SqliteDriverStatement | undefined
  return (parameters) => {
    prepared ??= handle.prepare(sql)
    return resultOf(prepared.busy ? handle.prepare(sql) : prepared, parameters)
  }
}

/**
 * `new SqliteDialect({ database: handle })` whose adapter runs precompiled queries in a
 * transaction on `handle` directly.
 *
 * @example
 * const db = new Kysely({ dialect: directSqliteDialect(cachingStatements(handle)) })
 */
export function directSqliteDialect(handle: SqliteHandle): DirectSqliteDialect {
  return new DirectSqliteDialect(handle)
}

/**
 * The dialect with the direct adapter. Its one driver is the one Kysely runs, so `directBatches`
 * waits on that driver's lock (a plain `SqliteDialect` would make a new driver with a lock of its own).
 */
export class DirectSqliteDialect extends SqliteDialect {
  readonly #adapter: DirectSqliteAdapter
  #driver: Driver | undefined

  constructor(handle: SqliteHandle) {
    super({ database: handle })
    this.#adapter = new DirectSqliteAdapter(handle)
  }

  override createAdapter(): SqliteAdapter {
    return this.#adapter
  }

  override createDriver(): Driver {
    return (this.#driver ??= super.createDriver())
  }
}

/**
 * Group commit's transactions on turnchart's own connection: the connection is held for the
 * batch (no other query runs on it meanwhile, as in Kysely's own transaction), and begin,
 * savepoints, commit and rollback run on the handle directly. Kysely's controlled transaction
 * costs 11–16 µs of CPU a transaction, this 3 µs (measured alone); a step commits two.
 *
 * The connection is taken from the dialect's driver, the one Kysely runs (`directSqliteDialect`
 * makes one): its lock is the one every query of Kysely's waits for. Not through
 * `db.connection()`, whose builder, provider and executor cost ~4 KB a batch; SQLite has one
 * connection, so the batches' `Transaction` over it is made once.
 *
 * @example
 * new GroupCommit(directBatches(db, dialect, handle), { verify })
 */
export function directBatches<DB>(db: Kysely<DB>, dialect: DirectSqliteDialect, handle: SqliteHandle): BatchOpener<DB> {
  const driver = dialect.createDriver()
  const begin = statementOn(handle, 'begin')
  const commit = statementOn(handle, 'commit')
  const rollback = statementOn(handle, 'rollback')
  const batch = {
    execute: async (query: CompiledQuery): Promise<void> => void runOn(handle, query),
    commit: async () => void commit([]),
    rollback: async () => void rollback([]),
  }
  let held: { connection: DatabaseConnection; trx: Transaction<DB> } | undefined
  const transactionOn = (connection: DatabaseConnection): Transaction<DB> => {
    if (held?.connection !== connection) {
      // Builder queries in the batch run on the held connection; the transaction's driver is never called (it begins and destroys nothing).
      const executor = db.getExecutor().withConnectionProvider({ provideConnection: (consume) => consume(connection) })
      held = { connection, trx: new Transaction<DB>({ config: { dialect }, dialect, driver, executor }) }
    }
    return held.trx
  }
  return async (work) => {
    const connection = await driver.acquireConnection()
    try {
      if (!connection) throw new Error('the SQLite connection is not open yet: the store is used before it was migrated')
      begin([])
      return await work({ trx: transactionOn(connection), ...batch })
    } finally {
      await driver.releaseConnection(connection)
    }
  }
}

/** What Kysely's SqliteConnection.executeQuery does, without its promise. */
function runOn(handle: SqliteHandle, { sql, parameters }: CompiledQuery): QueryResult<unknown> {
  return resultOf(handle.prepare(sql), parameters)
}

function resultOf(statement: SqliteDriverStatement, parameters: readonly unknown[]): QueryResult<unknown> {
  if (statement.reader) return { rows: statement.all(parameters) }
  const { changes, lastInsertRowid } = statement.run(parameters)
  return {
    numAffectedRows: changes !== undefined && changes !== null ? BigInt(changes) : undefined,
    insertId: lastInsertRowid !== undefined && lastInsertRowid !== null ? BigInt(lastInsertRowid) : undefined,
    rows: [],
  }
}
