/**
 * A turnchart database opened for reading only (the CLI's `sessions`, `show`, `replay`): the
 * schema is checked, never created or migrated, no turn is recovered, and every read runs in
 * one read-only transaction (a consistent snapshot; on PostgreSQL the server refuses writes).
 */
import { sql, type Kysely } from 'kysely'
import { NotATurnchartDatabaseError } from '../core/errors'
import { tableNames } from './database-tables'
import { migrations } from './migrations'
import { openDatabaseReadOnly, type Dialect } from './open-database'
import { KyselyStore } from './kysely/kysely-store'
import type { Store } from './store'
import type { TurnchartDatabase } from './schema'

/** The tables every turnchart database holds (the migration table last: it names the version). */
const turnchartTables = [
  'turnchart_sessions',
  'turnchart_messages',
  'turnchart_parts',
  'turnchart_turns',
  'turnchart_transitions',
  'turnchart_migrations',
] as const

export interface ReadOnlyStore {
  dialect: Dialect
  /** Runs `fn` in one read-only transaction with a store bound to it. */
  read<T>(fn: (store: Store) => Promise<T>): Promise<T>
  /**
   * A value that differs once another connection has committed, cheap enough to poll: SQLite's
   * `data_version` (a counter of this connection's, moved by any other connection's commit, from
   * this process or another), PostgreSQL's current snapshot (`xmin:xmax:running ids`: it moves
   * when a writing transaction starts or ends anywhere on the server, so it may move with no
   * change to this database, never the other way round). Reads nothing from the tables.
   */
  changeStamp(): Promise<string>
  close(): Promise<void>
}

/**
 * Opens `database` (a SQLite path or a postgres:// URL) for reading. Throws
 * `NotATurnchartDatabaseError` when it lacks turnchart's tables or needs a migration first.
 *
 * @example
 * const store = await openReadOnlyStore('./agent.db')
 * const sessions = await store.read((s) => s.sessions.list())
 * await store.close()
 */
export async function openReadOnlyStore(database: string, label = database): Promise<ReadOnlyStore> {
  const opened = openDatabaseReadOnly(database)
  const read = <T>(fn: (store: Store) => Promise<T>) =>
    opened.db.transaction().setAccessMode('read only').execute((trx) => fn(new KyselyStore(trx)))
  try {
    await opened.db.transaction().setAccessMode('read only').execute((trx) => checkSchema(trx, opened.dialect, label))
  } catch (error) {
    await opened.close()
    throw error
  }
  const changeStamp = async () => {
    const { rows } =
      opened.dialect === 'postgres'
        ? await sql<{ stamp: string }>`select pg_current_snapshot()::text as stamp`.execute(opened.db)
        : await sql<{ data_version: number }>`pragma data_version`.execute(opened.db)
    const row = rows[0] as { stamp?: string; data_version?: number } | undefined
    return String(row?.stamp ?? row?.data_version ?? '')
  }
  return { dialect: opened.dialect, read, changeStamp, close: () => opened.close() }
}

async function checkSchema(db: Kysely<TurnchartDatabase>, dialect: Dialect, label: string): Promise<void> {
  const tables = new Set(await tableNames(db, dialect, label))
  const missing = turnchartTables.filter((t) => !tables.has(t))
  if (missing.length === turnchartTables.length) throw new NotATurnchartDatabaseError(label, 'it has none of the turnchart_* tables')
  if (missing.length) throw new NotATurnchartDatabaseError(label, `tables missing: ${missing.join(', ')}`)
  const applied = new Set((await db.selectFrom('turnchart_migrations').select('name').execute()).map((r) => r.name))
  const pending = migrations.filter((m) => !applied.has(m.name)).map((m) => m.name)
  if (pending.length) {
    throw new NotATurnchartDatabaseError(
      label,
      `it was written by an older turnchart and needs migrations ${pending.join(', ')}; the CLI never migrates (the app's next createEngine does)`,
    )
  }
}
