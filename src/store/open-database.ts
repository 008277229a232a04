/**
 * Turns the `database` option into a Kysely instance with the pragmas turnchart relies on.
 */
import fs from 'node:fs'
import path from 'node:path'
import Database from 'better-sqlite3'
import { Kysely, SqliteDialect } from 'kysely'
import { InvalidOptionError } from '../errors'
import type { TurnchartDatabase } from './schema'

export type DatabaseOption = string | Kysely<any>

export interface OpenedDatabase {
  db: Kysely<TurnchartDatabase>
  dialect: 'sqlite' | 'postgres'
  /** Closes the connection when turnchart opened it; a caller's Kysely instance stays open. */
  close(): Promise<void>
}

export interface SqliteOptions {
  /** Milliseconds SQLite waits for a lock held by another connection. Default 5000. */
  busyTimeoutMs?: number
}

/**
 * Opens a SQLite file (created if missing; its folder must exist), an in-memory database,
 * or adopts a Kysely instance the caller owns.
 *
 * @example
 * const { db, close } = openDatabase('./agent.db')
 */
export function openDatabase(option: DatabaseOption | undefined, sqlite: SqliteOptions = {}): OpenedDatabase {
  const value = option ?? ':memory:'
  if (typeof value === 'string') {
    if (value.length === 0) throw new InvalidOptionError('database', value, "a file path, ':memory:' or a Kysely instance")
    if (value !== ':memory:') {
      const dir = path.dirname(path.resolve(value))
      if (!fs.existsSync(dir) || !fs.statSync(dir).isDirectory()) {
        throw new InvalidOptionError('database', value, `a file path in an existing folder (${dir} does not exist)`)
      }
    }
    const handle = new Database(value)
    handle.pragma('journal_mode = WAL')
    handle.pragma(`busy_timeout = ${sqlite.busyTimeoutMs ?? 5000}`)
    handle.pragma('foreign_keys = ON')
    handle.pragma('synchronous = NORMAL')
    const db = new Kysely<TurnchartDatabase>({ dialect: new SqliteDialect({ database: handle }) })
    return { db, dialect: 'sqlite', close: () => db.destroy() }
  }
  if (isKysely(value)) {
    const adapter = value.getExecutor().adapter.constructor.name
    const dialect = /postgres/i.test(adapter) ? 'postgres' : 'sqlite'
    return { db: value as Kysely<TurnchartDatabase>, dialect, close: async () => {} }
  }
  throw new InvalidOptionError('database', value, "a file path, ':memory:' or a Kysely instance")
}

function isKysely(value: unknown): value is Kysely<any> {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as Kysely<any>).selectFrom === 'function' &&
    typeof (value as Kysely<any>).transaction === 'function' &&
    typeof (value as Kysely<any>).getExecutor === 'function'
  )
}
