/**
 * Turns the `database` option into a Kysely instance with the settings turnchart relies on:
 * a SQLite file or `':memory:'` (better-sqlite3, pragmas set), a PostgreSQL URL (a `pg` pool,
 * loaded lazily: `pg` is an optional peer dependency), or a Kysely instance the caller owns.
 */
import fs from 'node:fs'
import path from 'node:path'
import type BetterSqlite3 from 'better-sqlite3'
import { Kysely, PostgresDialect, SqliteDialect } from 'kysely'
import { InvalidOptionError } from '../core/errors'
import type { TurnchartDatabase } from './schema'
import { shareConnection } from './sqlite/shared-connections'
import { cachingStatements } from './sqlite/statement-cache'

export type DatabaseOption = string | Kysely<any>

export type Dialect = 'sqlite' | 'postgres'

export interface OpenedDatabase {
  db: Kysely<TurnchartDatabase>
  dialect: Dialect
  /** Throws when the database can no longer be written safely (a SQLite file deleted under us). */
  verify?: () => void
  /** Closes the connection (or pool) when turnchart opened it; a caller's Kysely instance stays open. */
  close(): Promise<void>
}

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

const expected = "a file path, ':memory:', a postgres:// URL or a Kysely instance"

/**
 * Opens a SQLite file (created if missing; its folder must exist), an in-memory database,
 * a PostgreSQL database from a `postgres://` or `postgresql://` URL, or adopts a Kysely
 * instance the caller owns.
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
export function openDatabase(option: DatabaseOption | undefined, sqlite: SqliteOptions = {}): OpenedDatabase {
  const value = option ?? ':memory:'
  if (typeof value === 'string') {
    if (value.length === 0) throw new InvalidOptionError('database', value, expected)
    if (isPostgresUrl(value)) return openPostgres(value, { idleInTransactionTimeoutMs: sqlite.idleInTransactionTimeoutMs })
    const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(value)
    if (scheme) throw new InvalidOptionError('database', redactUrl(value), `${expected} (the URL scheme ${scheme[1]}: is not supported)`)
    if (value !== ':memory:') {
      const dir = path.dirname(path.resolve(value))
      if (!fs.existsSync(dir) || !fs.statSync(dir).isDirectory()) {
        throw new InvalidOptionError('database', value, `a file path in an existing folder (${dir} does not exist)`)
      }
    }
    if (value === ':memory:') return openSqlite(value, sqlite)
    // Engines of one process on one file share its connection (see shared-connections.ts).
    return shareConnection(value, () => openSqlite(value, sqlite))
  }
  if (isKysely(value)) {
    return { db: value as Kysely<TurnchartDatabase>, dialect: detectDialect(value), close: async () => {} }
  }
  throw new InvalidOptionError('database', value, expected)
}

function openSqlite(value: string, sqlite: SqliteOptions): OpenedDatabase {
  const Database = loadSqliteDriver(value)
  const handle = new Database(value)
  // Larger pages pack parts (a few KB of text each) with less slack; it applies to a new file only.
  handle.pragma('page_size = 8192')
  handle.pragma('journal_mode = WAL')
  handle.pragma(`busy_timeout = ${sqlite.busyTimeoutMs ?? 5000}`)
  handle.pragma('foreign_keys = ON')
  handle.pragma('synchronous = NORMAL')
  const db = new Kysely<TurnchartDatabase>({ dialect: new SqliteDialect({ database: cachingStatements(handle) }) })
  return { db, dialect: 'sqlite', close: () => db.destroy(), ...(value === ':memory:' ? {} : { verify: fileGuard(value) }) }
}

/** `better-sqlite3`, loaded only when a SQLite database is opened. Exported for tests. */
export const sqliteLoader = {
  load(): typeof BetterSqlite3 {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return require('better-sqlite3') as typeof BetterSqlite3
  },
}

/**
 * better-sqlite3 is an optional dependency (installed by default; a PostgreSQL-only app may
 * omit it, and a failed native build does not fail the app's install): missing, it is an
 * option error that says what to install.
 */
function loadSqliteDriver(value: string): typeof BetterSqlite3 {
  try {
    return sqliteLoader.load()
  } catch (error) {
    const code = (error as { code?: string }).code
    if (code !== 'MODULE_NOT_FOUND' && !/bindings|better_sqlite3\.node/.test(String((error as Error).message))) throw error
    throw new InvalidOptionError(
      'database',
      value,
      'a SQLite path with the optional dependency `better-sqlite3` installed and built (run `npm install better-sqlite3`), or a postgres:// URL',
    )
  }
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
  const Database = loadSqliteDriver(value)
  const handle = new Database(value, { readonly: true, fileMustExist: true })
  handle.pragma('busy_timeout = 5000')
  const db = new Kysely<TurnchartDatabase>({ dialect: new SqliteDialect({ database: handle }) })
  return { db, dialect: 'sqlite', close: () => db.destroy() }
}

/**
 * In WAL mode SQLite does not notice its file being deleted or replaced under an open
 * connection: it goes on writing to the unlinked inode, and everything is lost at close. The
 * guard compares the path's inode with the one opened, before each transaction.
 */
function fileGuard(file: string): () => void {
  const opened = fs.statSync(file)
  return () => {
    let now: fs.Stats | undefined
    try {
      now = fs.statSync(file)
    } catch {
      now = undefined
    }
    if (!now || now.ino !== opened.ino || now.dev !== opened.dev) {
      throw new Error(`the database file ${file} was deleted or replaced while the engine was running`)
    }
  }
}

/**
 * The dialect of a Kysely instance (or transaction), from its adapter: `'postgres'` for
 * Kysely's `PostgresAdapter` (and adapters named like it), otherwise `'sqlite'`.
 */
function detectDialect(db: Kysely<any>): Dialect {
  const adapter = db.getExecutor().adapter.constructor.name
  return /postgres/i.test(adapter) ? 'postgres' : 'sqlite'
}

export function isPostgresUrl(value: string): boolean {
  return /^postgres(ql)?:\/\//i.test(value)
}

/** The URL without its password, for messages (errors, the CLI's labels). */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url)
    if (parsed.password) parsed.password = '***'
    return parsed.toString()
  } catch {
    return url.replace(/\/\/([^:/@]+):[^@]*@/, '//$1:***@')
  }
}

interface PgModule {
  Pool: new (config: Record<string, unknown>) => PgPool
  types: { getTypeParser(oid: number, format?: string): (value: string) => unknown }
}
interface PgPool {
  on(event: 'error', listener: (error: Error) => void): unknown
  on(event: 'connect', listener: (client: { on(event: 'error', listener: (error: Error) => void): unknown }) => void): unknown
  end(): Promise<void>
}

/** `pg`, loaded only when a PostgreSQL URL is given. Exported for tests. */
export const pgLoader = {
  load(): PgModule {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return require('pg') as PgModule
  },
}

const schemaName = /^[a-z_][a-z0-9_]{0,62}$/

function openPostgres(value: string, mode: { readOnly?: boolean; idleInTransactionTimeoutMs?: number } = {}): OpenedDatabase {
  let url: URL
  try {
    url = new URL(value)
  } catch {
    throw new InvalidOptionError('database', redactUrl(value), 'a valid postgres:// URL')
  }
  const schema = url.searchParams.get('schema')
  const poolMax = url.searchParams.get('pool_max')
  url.searchParams.delete('schema')
  url.searchParams.delete('pool_max')
  if (schema !== null) {
    if (!schemaName.test(schema)) {
      throw new InvalidOptionError('database', redactUrl(value), 'a URL whose schema parameter is a schema name of lowercase letters, digits and _')
    }
    // Applied at connection start-up, so no query runs before it; `pg` takes `options` from the URL.
    const options = url.searchParams.get('options')
    url.searchParams.set('options', `${options ? options + ' ' : ''}-c search_path=${schema}`)
  }
  if (mode.readOnly) {
    // Every transaction of every connection read-only, whatever the caller runs.
    const options = url.searchParams.get('options')
    url.searchParams.set('options', `${options ? options + ' ' : ''}-c default_transaction_read_only=on`)
  }
  if (mode.idleInTransactionTimeoutMs !== undefined) {
    const options = url.searchParams.get('options')
    url.searchParams.set('options', `${options ? options + ' ' : ''}-c idle_in_transaction_session_timeout=${Math.round(mode.idleInTransactionTimeoutMs)}`)
  }
  let max = 10
  if (poolMax !== null) {
    max = Number(poolMax)
    if (!Number.isInteger(max) || max < 1) throw new InvalidOptionError('database', redactUrl(value), 'a URL whose pool_max parameter is an integer >= 1')
  }

  let pg: PgModule
  try {
    pg = pgLoader.load()
  } catch (error) {
    if ((error as { code?: string }).code !== 'MODULE_NOT_FOUND') throw error
    throw new InvalidOptionError(
      'database',
      redactUrl(value),
      'a PostgreSQL URL with the optional peer dependency `pg` installed (run `npm install pg`), or a SQLite path',
    )
  }
  const pool = new pg.Pool({
    connectionString: url.toString(),
    max,
    // int8 (bigint: our epoch-ms columns) as numbers; the repository copes with strings too,
    // for Kysely instances created by the caller.
    types: { getTypeParser: (oid: number, format?: string) => (oid === 20 ? Number : pg.types.getTypeParser(oid, format)) },
  })
  // An idle client that loses its connection emits 'error' on the pool; without a listener
  // Node would crash. The pool drops that client; the next query reports any real failure.
  pool.on('error', () => {})
  // A client checked out in a transaction that the server ends (idle_in_transaction_session_timeout,
  // a restart) emits 'error' too; its pending or next query fails, and that failure is reported.
  pool.on('connect', (client) => client.on('error', () => {}))
  const db = new Kysely<TurnchartDatabase>({ dialect: new PostgresDialect({ pool: pool as never }) })
  return { db, dialect: 'postgres', close: () => db.destroy() }
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
