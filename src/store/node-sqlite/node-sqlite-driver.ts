/**
 * Node's built-in SQLite (`node:sqlite`, `DatabaseSync`, Node ≥ 22.13) in the shape of
 * better-sqlite3 that turnchart's SQLite opener and Kysely's `SqliteDialect` use
 * (sqlite/sqlite-driver.ts): statements with `reader`, `all`, `run` and `iterate` taking an
 * array of parameters, `pragma`, and `backup` where this Node has `sqlite.backup` (22.16+).
 * Nothing native is installed: the module ships with Node.
 */
import fs from 'node:fs'
import { InvalidOptionError } from '../../core/errors'
import type { SqliteConnection, SqliteDriver, SqliteDriverStatement, SqliteOpenOptions } from '../sqlite/sqlite-driver'

/** The part of `node:sqlite` used here (declared: @types/node of Node 20 has no such module). */
interface NodeSqliteModule {
  DatabaseSync: new (path: string, options?: { readOnly?: boolean }) => DatabaseSync
  backup?: (source: DatabaseSync, path: string) => Promise<number>
}
interface DatabaseSync {
  prepare(sql: string): StatementSync
  exec(sql: string): void
  close(): void
}
interface StatementSync {
  all(...parameters: unknown[]): unknown[]
  run(...parameters: unknown[]): { changes: number | bigint; lastInsertRowid: number | bigint }
  iterate(...parameters: unknown[]): IterableIterator<unknown>
  /** Node 22.16+: the result's columns (none for a statement that returns no rows). */
  columns?(): unknown[]
}

/** The oldest Node whose node:sqlite turnchart runs on (`DatabaseSync` without a flag, `readOnly`). */
export const minimumNode = [22, 13] as const

/** Whether this Node is at least `minimumNode`. */
export function nodeHasSqlite(version = process.versions.node): boolean {
  const [major, minor] = version.split('.').map(Number)
  return major > minimumNode[0] || (major === minimumNode[0] && minor >= minimumNode[1])
}

/** `node:sqlite`, loaded only when such a database is opened. Exported for tests. */
export const nodeSqliteLoader = {
  load(): NodeSqliteModule {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return require('node:sqlite') as NodeSqliteModule
  },
}

/**
 * Without a `columns()` (Node 22.13 to 22.15), whether a statement returns rows is read from its
 * SQL: a query, a pragma, or a write with RETURNING. Kysely asks it to choose between `all` (rows)
 * and `run` (the count of changed rows, which fenced writes read).
 */
const returnsRows = /^\s*(?:select|with|pragma|values|explain)\b|\breturning\b/i

function statement(handle: StatementSync, sql: string): SqliteDriverStatement {
  const reader = typeof handle.columns === 'function' ? handle.columns().length > 0 : returnsRows.test(sql)
  return {
    reader,
    // Every call runs to its end before it returns (no streamed query is left iterating).
    busy: false,
    all: (parameters) => handle.all(...parameters),
    run: (parameters) => handle.run(...parameters),
    iterate: (parameters) => handle.iterate(...parameters),
  }
}

/**
 * The driver's constructor: `new (nodeSqliteDriver())(file, { readonly, fileMustExist })`. On a
 * Node older than 22.13 it is an `InvalidOptionError` naming `database.driver`.
 */
export function nodeSqliteDriver(): SqliteDriver {
  if (!nodeHasSqlite()) {
    throw new InvalidOptionError('database.driver', 'node:sqlite', `a driver this Node.js has: node:sqlite needs Node.js ${minimumNode.join('.')} or later (this is ${process.version}); use 'better-sqlite3'`)
  }
  const sqlite = nodeSqliteLoader.load()
  return class NodeSqliteConnection implements SqliteConnection {
    readonly #db: DatabaseSync
    readonly backup?: (destination: string) => Promise<unknown>
    constructor(filename: string, options: SqliteOpenOptions = {}) {
      if (options.fileMustExist && filename !== ':memory:' && !fs.existsSync(filename)) {
        throw Object.assign(new Error(`unable to open database file: ${filename} does not exist`), { code: 'SQLITE_CANTOPEN' })
      }
      this.#db = new sqlite.DatabaseSync(filename, options.readonly ? { readOnly: true } : {})
      const backup = sqlite.backup
      if (backup) this.backup = (destination) => backup(this.#db, destination)
    }
    prepare(sql: string): SqliteDriverStatement {
      return statement(this.#db.prepare(sql), sql)
    }
    /** `pragma x = y` runs; `pragma x` returns its rows. */
    pragma(source: string): unknown {
      return this.#db.prepare(`pragma ${source}`).all()
    }
    close(): void {
      this.#db.close()
    }
  }
}
