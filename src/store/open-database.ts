/**
 * Turns the `database` option into a Kysely instance with the settings turnchart relies on: a
 * SQLite file or `':memory:'` (sqlite/open-sqlite.ts), a PostgreSQL URL
 * (postgres/open-postgres.ts), or a Kysely instance the caller owns. Only the dispatch is here;
 * a `MemoryStore` is no database, and the engine takes it as it is (engine/open-store.ts).
 */
import type { Kysely } from 'kysely'
import { InvalidOptionError } from '../core/errors'
import type { MemoryStore } from './memory/memory-store'
import type { Dialect, OpenedDatabase } from './opened-database'
import { isPostgresUrl, openPostgres, redactUrl } from './postgres/open-postgres'
import type { TurnchartDatabase } from './schema'
import { openSqlite, openSqliteReadOnly } from './sqlite/open-sqlite'

export type { Dialect, OpenedDatabase } from './opened-database'
export { isPostgresUrl, pgLoader, redactUrl } from './postgres/open-postgres'
export { sqliteLoader } from './sqlite/open-sqlite'

/**
 * A SQLite file that may already hold another app's tables: turnchart adds its own beside them
 * (`shared: true`). A path alone refuses such a file (`NotATurnchartDatabaseError`), so that a
 * path pointing at the wrong file changes nothing in it.
 */
export interface SqliteFileOption {
  /** The SQLite file (created if missing; its folder must exist). */
  file: string
  /** Add turnchart's tables to this file even when it holds other tables and none of turnchart's. */
  shared?: boolean
}

/** The `database` option: a SQLite path or `':memory:'`, a SQLite file shared with the app (`{ file, shared: true }`), a postgres:// URL, a caller's Kysely instance, or a `MemoryStore`. */
export type DatabaseOption = string | SqliteFileOption | Kysely<any> | MemoryStore

export interface SqliteOptions {
  /** Milliseconds SQLite waits for a lock held by another connection. Default 5000. */
  busyTimeoutMs?: number
  /**
   * PostgreSQL URLs: a transaction left idle longer than this is ended by the server
   * (`idle_in_transaction_session_timeout`), so an engine stalled inside one cannot hold the
   * turn's row lock past its lease. The engine passes its `leaseMs`.
   */
  idleInTransactionTimeoutMs?: number
}

const expected = "a file path, ':memory:', { file, shared }, a postgres:// URL, a Kysely instance or a MemoryStore"

/**
 * Opens a SQLite file (created if missing; its folder must exist; a file holding another app's
 * tables only as `{ file, shared: true }`), an in-memory database, a PostgreSQL database from a
 * `postgres://` or `postgresql://` URL, or adopts a Kysely instance the caller owns.
 *
 * PostgreSQL URLs accept two query parameters of turnchart's own, removed before the URL is
 * handed to `pg`: `schema` (turnchart's tables go into that schema, created by the migration
 * if missing; sets `search_path` on every connection) and `pool_max` (the pool size, default
 * 10). Every other parameter is `pg`'s (`sslmode`, `options=-c search_path=x`, ...).
 *
 * @example
 * const { db, close } = openDatabase('./agent.db')
 * const pg = openDatabase('postgres://app@db.internal:5432/app?schema=agent&pool_max=20')
 */
export function openDatabase(option: Exclude<DatabaseOption, MemoryStore> | undefined, sqlite: SqliteOptions = {}): OpenedDatabase {
  const value = option ?? ':memory:'
  if (typeof value === 'string') {
    if (value.length === 0) throw new InvalidOptionError('database', value, expected)
    if (isPostgresUrl(value)) return openPostgres(value, { idleInTransactionTimeoutMs: sqlite.idleInTransactionTimeoutMs })
    const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(value)
    if (scheme) throw new InvalidOptionError('database', redactUrl(value), `${expected} (the URL scheme ${scheme[1]}: is not supported)`)
    return openSqlite(value, { busyTimeoutMs: sqlite.busyTimeoutMs })
  }
  if (isKysely(value)) {
    return { db: value as Kysely<TurnchartDatabase>, dialect: detectDialect(value), close: async () => {} }
  }
  if (isSqliteFileOption(value)) return openSqlite(value.file, { busyTimeoutMs: sqlite.busyTimeoutMs, shared: value.shared === true })
  throw new InvalidOptionError('database', value, expected)
}

/** `{ file, shared? }`: a non-empty path that is not a URL, and no other key. */
function isSqliteFileOption(value: unknown): value is SqliteFileOption {
  if (typeof value !== 'object' || value === null || isKysely(value)) return false
  const option = value as Record<string, unknown>
  if (!('file' in option)) return false
  const extra = Object.keys(option).filter((key) => key !== 'file' && key !== 'shared')
  if (extra.length) throw new InvalidOptionError(`database.${extra[0]}`, option[extra[0]], 'no such key (database takes { file, shared })')
  if (typeof option.file !== 'string' || option.file.length === 0 || option.file === ':memory:' || /^[a-z][a-z0-9+.-]*:\/\//i.test(option.file)) {
    throw new InvalidOptionError('database.file', option.file, 'a SQLite file path')
  }
  if (option.shared !== undefined && typeof option.shared !== 'boolean') throw new InvalidOptionError('database.shared', option.shared, 'a boolean')
  return true
}

/**
 * Opens an existing database for reading only: a SQLite file with `readonly: true` (never
 * created, no pragma that writes, so the file stays byte-for-byte the same), or a PostgreSQL
 * URL whose connections start with `default_transaction_read_only=on`. Used by the CLI's
 * read commands; it neither migrates nor recovers.
 *
 * @example
 * const { db, close } = openDatabaseReadOnly('./agent.db')
 */
export function openDatabaseReadOnly(value: string): OpenedDatabase {
  if (typeof value !== 'string' || value.length === 0 || value === ':memory:') throw new InvalidOptionError('database', value, 'a SQLite file path or a postgres:// URL')
  if (isPostgresUrl(value)) return openPostgres(value, { readOnly: true })
  return openSqliteReadOnly(value)
}

/**
 * The dialect of a Kysely instance (or transaction), from its adapter: `'postgres'` for
 * Kysely's `PostgresAdapter` (and adapters named like it), otherwise `'sqlite'`.
 */
function detectDialect(db: Kysely<any>): Dialect {
  const adapter = db.getExecutor().adapter.constructor.name
  return /postgres/i.test(adapter) ? 'postgres' : 'sqlite'
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
