/**
 * Opens SQLite with better-sqlite3 (an optional dependency, loaded only here) or another
 * driver of the same shape (`SqliteDriver`: node-sqlite/ passes Node's built-in one): the
 * pragmas turnchart relies on, one shared connection per file per process, the statement cache,
 * and the guard against a file deleted under the engine. Also the read-only opening of the CLI.
 */
import fs from 'node:fs'
import path from 'node:path'
import { Kysely, SqliteDialect } from 'kysely'
import { InvalidOptionError } from '../../core/errors'
import { refuseAnotherAppsFile } from './database-tables'
import type { OpenedDatabase } from '../backend'
import type { TurnchartDatabase } from '../schema'
import { storeChanges } from '../table-changes'
import { GroupCommit } from '../group-commit'
import { shareConnection } from './shared-connections'
import { sqliteDialect } from './sqlite-dialect'
import type { SqliteConnection, SqliteDriver, SqliteOpenOptions } from './sqlite-driver'
import { removeWalFilesOfReading, walFiles } from './wal-files'
import { cachingStatements } from './statement-cache'
import { directBatches, directSqliteDialect } from './direct-statements'

/** `better-sqlite3`, loaded only when a SQLite database is opened. Exported for tests. */
export const sqliteLoader = {
  load(): SqliteDriver {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return require('better-sqlite3') as SqliteDriver
  },
}

export interface SqliteOpenSettings {
  busyTimeoutMs?: number
  /** The driver's constructor, loaded when the connection opens (default: better-sqlite3's, with its errors said as what to do). */
  driver?: (value: string) => SqliteDriver
  /** The file may hold another app's tables: add turnchart's beside them instead of refusing it. */
  shared?: boolean
}

/**
 * A SQLite file (created if missing; its folder must exist) or `':memory:'`, for the engine:
 * engines of one process on one file share its connection (see shared-connections.ts). A file
 * of another app (its tables, none of turnchart's) is refused before anything is written to it,
 * unless `shared`.
 *
 * @example
 * const { db, close } = openSqlite('./agent.db', { busyTimeoutMs: 5000 })
 */
export function openSqlite(value: string, options: SqliteOpenSettings = {}): OpenedDatabase {
  if (value === ':memory:') return openSqliteConnection(value, options)
  const dir = path.dirname(path.resolve(value))
  if (!fs.existsSync(dir) || !fs.statSync(dir).isDirectory()) {
    throw new InvalidOptionError('database', value, `a file path in an existing folder (${dir} does not exist)`)
  }
  refuseDirectory(value)
  return shareConnection(value, () => openSqliteConnection(value, options))
}

/** SQLite opens a folder and then fails every statement with "disk I/O error": say what is wrong instead. */
function refuseDirectory(value: string): void {
  if (fs.statSync(value, { throwIfNoEntry: false })?.isDirectory()) {
    throw new InvalidOptionError('database', value, 'a SQLite file path, not a directory (name a file inside it, e.g. agent.db)')
  }
}

function openSqliteConnection(value: string, options: SqliteOpenSettings): OpenedDatabase {
  const Database = (options.driver ?? loadSqliteDriver)(value)
  const handle = newHandle(Database, value)
  // First (a setting of this connection, nothing written): what follows may wait for another's lock.
  handle.pragma(`busy_timeout = ${options.busyTimeoutMs ?? 5000}`)
  if (value !== ':memory:' && !options.shared) {
    try {
      const tables = handle.prepare("select name from sqlite_master where type = 'table'").all([]) as Array<{ name: string }>
      refuseAnotherAppsFile(value, tables.map((t) => t.name))
    } catch (error) {
      handle.close()
      throw error
    }
  }
  // Every commit writes each page it touched whole into the WAL (~7 pages a commit, two commits a
  // step): 4 KB pages cost 0.9x the CPU per step of 8 KB ones on a file, for ~1.2x the file's
  // bytes (multi-KB parts leave more slack). It applies to a new file only.
  handle.pragma('page_size = 4096')
  handle.pragma('journal_mode = WAL')
  handle.pragma('foreign_keys = ON')
  handle.pragma('synchronous = NORMAL')
  const statements = cachingStatements(handle)
  const dialect = directSqliteDialect(statements)
  const db = new Kysely<TurnchartDatabase>({ dialect })
  const verify = value === ':memory:' ? undefined : fileGuard(value)
  // Another connection's commit to the file (another engine, the app's own) changes `data_version`.
  const dataVersion = handle.prepare('pragma data_version')
  return {
    db,
    sql: sqliteDialect,
    ...(verify ? { verify } : {}),
    changes: storeChanges(value === ':memory:' ? undefined : () => (dataVersion.all([])[0] as { data_version: number }).data_version),
    // SQLite runs one transaction at a time anyway: those of concurrent turns share commits.
    groupCommit: () => new GroupCommit(directBatches(db, dialect, statements), { verify }),
    ...backupOf(handle),
    close: async () => {
      if (value !== ':memory:') checkpointAtClose(handle)
      await db.destroy()
    },
  }
}

/**
 * Moves the WAL into the database file before the connection closes. SQLite does it by itself
 * only when the last connection to the file closes: with a reader open (`turnchart view`), the
 * committed rows would stay in `-wal` and a copy of the file alone would hold none of them.
 * TRUNCATE copies every frame and empties the WAL; a reader that is only connected does not
 * stop it, one inside a read transaction makes it wait up to busy_timeout and then give up
 * (nothing is lost: the frames stay in the WAL for the next checkpoint).
 */
function checkpointAtClose(handle: SqliteConnection): void {
  try {
    handle.pragma('wal_checkpoint(TRUNCATE)')
  } catch {
    // A busy or read-only file: the WAL keeps the rows, as it did before.
  }
}

/**
 * An existing SQLite file, read only: `readonly: true` (never created, no pragma that writes,
 * so the file stays byte-for-byte the same), and no -wal or -shm file left beside it that was
 * not there before (see wal-files.ts).
 *
 * @example
 * const { db, close } = openSqliteReadOnly('./agent.db')
 */
export function openSqliteReadOnly(value: string, driver: (value: string) => SqliteDriver = loadSqliteDriver): OpenedDatabase {
  refuseDirectory(value)
  const Database = driver(value)
  const before = walFiles(value)
  const handle = newHandle(Database, value, { readonly: true, fileMustExist: true })
  handle.pragma('busy_timeout = 5000')
  const db = new Kysely<TurnchartDatabase>({ dialect: new SqliteDialect({ database: handle }) })
  const close = async () => {
    await db.destroy()
    removeWalFilesOfReading(value, before, Database)
  }
  return { db, sql: sqliteDialect, ...backupOf(handle), close }
}

/** The online-backup capability, when the driver has SQLite's backup API. */
function backupOf(handle: SqliteConnection): Pick<OpenedDatabase, 'backup'> {
  const backup = handle.backup?.bind(handle)
  return backup ? { backup: async (to) => void (await backup(to)) } : {}
}

/**
 * better-sqlite3 is an optional dependency (installed by default; a PostgreSQL-only app may
 * omit it, and a failed native build does not fail the app's install): missing, it is an
 * option error that says what to install (and, for `':memory:'`, that `MemoryStore` needs
 * nothing native).
 */
function loadSqliteDriver(value: string): SqliteDriver {
  try {
    return sqliteLoader.load()
  } catch (error) {
    throw driverProblem(error, value) ?? error
  }
}

/**
 * A connection: better-sqlite3 loads its native module at the first `new Database`, so a
 * module built for another Node.js fails here, not at `require`; that is an option error with
 * the rebuild command, not a storage failure.
 */
function newHandle(Database: SqliteDriver, value: string, options?: SqliteOpenOptions): SqliteConnection {
  try {
    return new Database(value, options)
  } catch (error) {
    throw driverProblem(error, value) ?? error
  }
}

/** What is wrong with the driver, said as what to do; undefined for any other error. */
function driverProblem(error: unknown, value: string): InvalidOptionError | undefined {
  const message = String((error as Error | undefined)?.message ?? error)
  const built = /NODE_MODULE_VERSION (\d+)/.exec(message)
  if (built || (error as { code?: string }).code === 'ERR_DLOPEN_FAILED') {
    return new InvalidOptionError(
      'database',
      value,
      `a SQLite path with better-sqlite3 built for this Node.js (${process.version}, NODE_MODULE_VERSION ${process.versions.modules}); ` +
        `it was built for another one${built ? ` (NODE_MODULE_VERSION ${built[1]})` : ''}: run \`npm rebuild better-sqlite3\` with this Node.js`,
    )
  }
  if ((error as { code?: string }).code !== 'MODULE_NOT_FOUND' && !/bindings|better_sqlite3\.node/.test(message)) return undefined
  const inMemory =
    value === ':memory:'
      ? ` (the default database, ':memory:', is SQLite too: on Node.js 22.13 or later it uses the built-in node:sqlite instead, but this is ${process.version}; for one in memory with nothing native, pass \`database: new MemoryStore()\`)`
      : ''
  return new InvalidOptionError(
    'database',
    value,
    `a SQLite path with the optional dependency \`better-sqlite3\` installed and built (run \`npm install better-sqlite3\`), or a postgres:// URL${inMemory}`,
  )
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
