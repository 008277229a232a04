/**
 * The `{ file, shared?, driver? }` form of the `database` option, which every SQLite driver's
 * backend takes (better-sqlite3 here, node:sqlite in node-sqlite/): the checks of its keys, and
 * the driver it names.
 */
import { InvalidOptionError } from '../../core/errors'

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
  /**
   * The SQLite driver: `'better-sqlite3'` (the default; a native module, an optional
   * dependency) or `'node:sqlite'` (built into Node ≥ 22.13: nothing to install or compile).
   */
  driver?: 'better-sqlite3' | 'node:sqlite'
}

/**
 * True when `value` is `{ file, shared?, driver? }` naming `driver` (absent: better-sqlite3);
 * a value of that form whose keys are wrong is an `InvalidOptionError` naming the key.
 */
export function isSqliteFileOption(value: unknown, driver: NonNullable<SqliteFileOption['driver']>): value is SqliteFileOption {
  if (typeof value !== 'object' || value === null || !('file' in value)) return false
  const option = value as Record<string, unknown>
  const extra = Object.keys(option).filter((key) => key !== 'file' && key !== 'shared' && key !== 'driver')
  if (extra.length) throw new InvalidOptionError(`database.${extra[0]}`, option[extra[0]], 'no such key (database takes { file, shared, driver })')
  // ':memory:' only with a driver named: without one, the string ':memory:' says it.
  if (typeof option.file !== 'string' || option.file.length === 0 || (option.file === ':memory:' && option.driver === undefined) || /^[a-z][a-z0-9+.-]*:\/\//i.test(option.file)) {
    throw new InvalidOptionError('database.file', option.file, 'a SQLite file path')
  }
  if (option.shared !== undefined && typeof option.shared !== 'boolean') throw new InvalidOptionError('database.shared', option.shared, 'a boolean')
  return (option.driver ?? 'better-sqlite3') === driver
}

/** A path or `':memory:'`, not a URL: what a SQLite backend takes as a string. */
export function isSqlitePath(value: unknown): value is string {
  return typeof value === 'string' && value.length > 0 && !/^[a-z][a-z0-9+.-]*:\/\//i.test(value)
}
