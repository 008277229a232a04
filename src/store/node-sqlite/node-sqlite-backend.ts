/**
 * SQLite on Node's built-in driver: `database: { file, driver: 'node:sqlite' }` (`file` may be
 * `':memory:'`), Node ≥ 22.13, nothing native to install or build. The same opener as
 * better-sqlite3's (sqlite/open-sqlite.ts: pragmas, shared connection, statement cache, the
 * guard against a deleted file, another app's file refused unless `shared`) with the driver of
 * node-sqlite-driver.ts. Capabilities: group commit; read-only opening, for the CLI and the
 * viewer on a Node that has node:sqlite where better-sqlite3 is missing or cannot load (a path
 * names no driver: better-sqlite3 reads it when it can); online backup on Node 22.16+
 * (`sqlite.backup`; absent before). No notifications, no schema.
 *
 * It takes `':memory:'` too (the default `database`) where better-sqlite3 is missing or cannot
 * load and this Node has node:sqlite: a quick start on Node 22 needs nothing native. Elsewhere
 * `':memory:'` is better-sqlite3's (whose error, when it is missing, names `MemoryStore`).
 */
import fs from 'node:fs'
import type { StoreBackend } from '../backend'
import { openSqlite, openSqliteReadOnly, sqliteLoader } from '../sqlite/open-sqlite'
import { isSqliteFileOption, isSqlitePath } from '../sqlite/sqlite-file-option'
import { nodeHasSqlite, nodeSqliteDriver } from './node-sqlite-driver'

let betterSqliteMissing: boolean | undefined
/** Whether better-sqlite3 is missing or cannot load here (asked once): then the CLI reads SQLite files with node:sqlite. */
function withoutBetterSqlite(): boolean {
  if (betterSqliteMissing === undefined) {
    try {
      new (sqliteLoader.load())(':memory:').close()
      betterSqliteMissing = false
    } catch {
      betterSqliteMissing = true
    }
  }
  return betterSqliteMissing
}

export const nodeSqliteBackend: StoreBackend = {
  name: 'node:sqlite',
  accepts: (database) => isSqliteFileOption(database, 'node:sqlite') || (database === ':memory:' && nodeHasSqlite() && withoutBetterSqlite()),
  open(database, settings) {
    const option = (typeof database === 'string' ? { file: database } : database) as { file: string; shared?: boolean }
    // Checked before any file is touched: on an older Node this is the option's error.
    const driver = nodeSqliteDriver()
    return openSqlite(option.file, { busyTimeoutMs: settings.busyTimeoutMs, shared: option.shared === true, driver: () => driver })
  },
  readOnly: {
    accepts: (location) => isSqlitePath(location) && location !== ':memory:' && nodeHasSqlite() && withoutBetterSqlite(),
    label: (location) => location,
    exists: (location) => fs.existsSync(location),
    pollMs: 100,
    open: (location) => openSqliteReadOnly(location, () => nodeSqliteDriver()),
  },
}
