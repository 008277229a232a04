/**
 * A turnchart database opened for reading only (the CLI's `sessions`, `show`, `replay`, the
 * viewer), by the backend whose read-only opening takes its location: the schema is checked,
 * never created or migrated, no turn is recovered, and every read runs in one read-only
 * transaction (a consistent snapshot; on PostgreSQL the server refuses writes).
 */
import type { Kysely } from 'kysely'
import { InvalidOptionError, NotATurnchartDatabaseError } from '../../core/errors'
import type { OpenedDatabase, SqlDialect } from '../backend'
import { KyselyStore } from '../kysely/kysely-store'
import { migrations } from '../migrations'
import type { TurnchartDatabase } from '../schema'
import type { Store } from '../store'
import { readOnlyOpeningFor } from './registry'

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
  /** The location as messages show it (no password). */
  label: string
  /** How often a viewer polls `changeStamp` by default, in ms (the backend's estimate of its cost). */
  pollMs: number
  /** Runs `fn` in one read-only transaction with a store bound to it. */
  read<T>(fn: (store: Store) => Promise<T>): Promise<T>
  /**
   * A value that differs once another connection has committed, cheap enough to poll (see
   * `SqlDialect.changeStamp`). Reads nothing from the tables.
   */
  changeStamp(): Promise<string>
  /** Capability: an online backup into the new file `to` (absent when the backend has none). */
  backup?(to: string): Promise<void>
  close(): Promise<void>
}

/**
 * What the CLI checks before opening: `location`'s label, and whether it may hold a database
 * at all (a file that does not exist does not). Undefined when no backend reads such a location.
 *
 * @example
 * readOnlyLocation('./agent.db') // { label: './agent.db', exists: true }
 */
export function readOnlyLocation(location: string): { label: string; exists: boolean } | undefined {
  const opening = readOnlyOpeningFor(location)
  return opening && { label: opening.label(location), exists: opening.exists(location) }
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
export async function openReadOnlyStore(database: string, label?: string): Promise<ReadOnlyStore> {
  const opening = typeof database === 'string' ? readOnlyOpeningFor(database) : undefined
  if (!opening) throw new InvalidOptionError('database', database, 'a SQLite file path or a postgres:// URL')
  const shown = label ?? opening.label(database)
  const opened: OpenedDatabase = opening.open(database)
  const read = <T>(fn: (store: Store) => Promise<T>) =>
    opened.db.transaction().setAccessMode('read only').execute((trx) => fn(new KyselyStore(trx)))
  try {
    await opened.db.transaction().setAccessMode('read only').execute((trx) => checkSchema(trx, opened.sql, shown))
  } catch (error) {
    await opened.close()
    throw error
  }
  return {
    label: shown,
    pollMs: opening.pollMs,
    read,
    changeStamp: () => opened.sql.changeStamp(opened.db),
    ...(opened.backup ? { backup: opened.backup } : {}),
    close: () => opened.close(),
  }
}

async function checkSchema(db: Kysely<TurnchartDatabase>, dialect: SqlDialect, label: string): Promise<void> {
  const tables = new Set(await dialect.tableNames(db, label))
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
