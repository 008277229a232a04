/**
 * The SQLite backend on better-sqlite3: a path, `':memory:'`, `{ file, shared? }` (or with
 * `driver: 'better-sqlite3'`), or a caller's Kysely instance on Kysely's SqliteDialect. Its
 * capabilities: group commit, read-only opening, online backup. It has no notifications (its
 * engines poll) and no schema.
 */
import fs from 'node:fs'
import type { StoreBackend } from '../backend'
import { isKyselyOn } from '../kysely/kysely-instance'
import type { TurnchartDatabase } from '../schema'
import { GroupCommit, kyselyBatches } from '../group-commit'
import { openSqlite, openSqliteReadOnly } from './open-sqlite'
import { sqliteDialect } from './sqlite-dialect'
import { isSqliteFileOption, isSqlitePath } from './sqlite-file-option'
import type { Kysely } from 'kysely'

export const sqliteBackend: StoreBackend = {
  name: 'sqlite',
  accepts: (database) => isSqlitePath(database) || isSqliteFileOption(database, 'better-sqlite3') || isKyselyOn(database, 'sqlite'),
  open(database, settings) {
    if (isKyselyOn(database, 'sqlite')) {
      // The caller's: it stays open. One connection too (Kysely's SqliteDialect), so commits are shared.
      const db = database as Kysely<TurnchartDatabase>
      return { db, sql: sqliteDialect, groupCommit: () => new GroupCommit(kyselyBatches(db)), close: async () => {} }
    }
    if (typeof database === 'string') return openSqlite(database, { busyTimeoutMs: settings.busyTimeoutMs })
    const option = database as { file: string; shared?: boolean }
    return openSqlite(option.file, { busyTimeoutMs: settings.busyTimeoutMs, shared: option.shared === true })
  },
  readOnly: {
    accepts: (location) => isSqlitePath(location) && location !== ':memory:',
    label: (location) => location,
    exists: (location) => fs.existsSync(location),
    // A local file: reading its data_version costs microseconds.
    pollMs: 100,
    open: openSqliteReadOnly,
  },
}
