/**
 * The part of better-sqlite3 turnchart uses, declared here rather than imported from
 * `@types/better-sqlite3`: better-sqlite3 is an optional dependency and its types a dev
 * dependency, so a published declaration that named them would fail an app's `tsc` without
 * `skipLibCheck` (TS7016). test/types/sqlite-driver.test.ts checks better-sqlite3 fits these.
 */
import type { SqliteDatabase, SqliteStatement } from 'kysely'

/** A prepared statement: what Kysely's `SqliteDialect` runs, and whether it is still iterating. */
export interface SqliteDriverStatement extends SqliteStatement {
  /** True while a streamed query iterates it (it cannot run again until then). */
  readonly busy: boolean
}

/** A connection: what Kysely's `SqliteDialect` uses, plus pragmas. */
export interface SqliteConnection extends SqliteDatabase {
  prepare(sql: string): SqliteDriverStatement
  pragma(source: string): unknown
  /** An online backup into a new file (SQLite's backup API), while this connection goes on; absent when the driver has none. */
  backup?(destination: string): Promise<unknown>
}

export interface SqliteOpenOptions {
  readonly?: boolean
  fileMustExist?: boolean
}

/** The module's export: `new Database(file, options)`. */
export type SqliteDriver = new (filename: string, options?: SqliteOpenOptions) => SqliteConnection
