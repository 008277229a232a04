/**
 * The engine's database: opened, its schema brought up to date, and the repository over it.
 * A failure is a `StorageError` naming the step, and leaves no connection open.
 */
import type { ResolvedConfig } from '../config/resolved-config'
import type { EngineOptions } from '../config/options'
import { asStorageError } from './engine-calls'
import { migrate } from '../store/migrations'
import { openDatabase, type OpenedDatabase } from '../store/open-database'
import { GroupCommit } from '../store/sqlite/group-commit'
import { KyselyStore } from '../store/kysely/kysely-store'
import type { Store } from '../store/store'

/**
 * @example
 * const { opened, store } = await openEngineStore(options, config)
 */
export async function openEngineStore(options: EngineOptions, config: ResolvedConfig): Promise<{ opened: OpenedDatabase; store: Store }> {
  let opened: OpenedDatabase
  try {
    opened = openDatabase(options.database, { busyTimeoutMs: options.busyTimeoutMs, idleInTransactionTimeoutMs: config.leaseMs })
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
  return { opened, store: new KyselyStore(opened.db, opened.verify, group) }
}
