/**
 * The engine's store: a caller's `MemoryStore` as it is, or a database opened, its schema
 * brought up to date, and the Kysely store over it. A failure is a `StorageError` naming the
 * step, and leaves no connection open.
 */
import type { ResolvedConfig } from '../config/resolved-config'
import type { EngineOptions } from '../config/options'
import { asStorageError } from './engine-calls'
import { migrate } from '../store/migrations'
import { MemoryStore } from '../store/memory/memory-store'
import { openDatabase, type DatabaseOption, type OpenedDatabase, type SqliteOptions } from '../store/open-database'
import { GroupCommit } from '../store/sqlite/group-commit'
import { KyselyStore } from '../store/kysely/kysely-store'
import type { OpenedStore } from '../store/store'

/**
 * @example
 * const { store, dialect, close } = await openEngineStore(options, config)
 */
export function openEngineStore(options: EngineOptions, config: ResolvedConfig): Promise<OpenedStore> {
  return openStore(options.database, { busyTimeoutMs: options.busyTimeoutMs, idleInTransactionTimeoutMs: config.leaseMs })
}

/**
 * The store of a `database` option, as the engine opens it (the conformance suite opens its
 * SQLite and PostgreSQL stores with it too). A `MemoryStore` is the caller's: closing does
 * nothing to it, so other engines sharing it go on.
 *
 * @example
 * const { store, close } = await openStore('./agent.db')
 */
export async function openStore(database: DatabaseOption | undefined, settings: SqliteOptions = {}): Promise<OpenedStore> {
  if (database instanceof MemoryStore) return { store: database, dialect: 'memory', close: async () => {} }
  let opened: OpenedDatabase
  try {
    opened = openDatabase(database, settings)
  } catch (error) {
    throw asStorageError('open the database', error)
  }
  try {
    await migrate(opened.db, opened.dialect)
  } catch (error) {
    await opened.close()
    throw asStorageError('migrate the database', error)
  }
  // SQLite runs one transaction at a time anyway: those of concurrent turns share commits.
  const group = opened.dialect === 'sqlite' ? new GroupCommit(opened.db, opened.verify) : undefined
  return { store: new KyselyStore(opened.db, opened.verify, group), dialect: opened.dialect, close: () => opened.close() }
}
