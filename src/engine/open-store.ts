/**
 * The engine's store: a caller's `MemoryStore` as it is, or a database opened, its schema
 * brought up to date, and the Kysely store over it; on PostgreSQL, the engine's listening
 * connection too (notifications). A failure of the store is a `StorageError` naming the step,
 * and leaves no connection open; a failure of the listener only is reported, and the engine
 * polls.
 */
import type { ResolvedConfig } from '../config/resolved-config'
import type { EngineOptions } from '../config/options'
import { InvalidOptionError, type NotificationListenerError } from '../core/errors'
import { asStorageError } from './engine-calls'
import { migrate } from '../store/migrations'
import { MemoryStore } from '../store/memory/memory-store'
import { openDatabase, redactUrl, type DatabaseOption, type OpenedDatabase, type SqliteOptions } from '../store/open-database'
import { listenForChanges, storeSchema, type StoreNotifications } from '../store/postgres/notifications'
import { postgresConnection } from '../store/postgres/open-postgres'
import { GroupCommit } from '../store/sqlite/group-commit'
import { KyselyStore } from '../store/kysely/kysely-store'
import type { OpenedStore } from '../store/store'

/** The engine's store, with its listening connection when it has one. */
export interface EngineStore extends OpenedStore {
  /** PostgreSQL notifications of other engines' writes; undefined: the engine polls only. */
  notifications?: StoreNotifications
}

/**
 * @example
 * const { store, notifications, close } = await openEngineStore(options, config, { onError, redact })
 */
export async function openEngineStore(
  options: EngineOptions,
  config: ResolvedConfig,
  listener: { onError(error: NotificationListenerError): void; redact(text: string): string },
): Promise<EngineStore> {
  const opened = await openStore(options.database, { busyTimeoutMs: options.busyTimeoutMs, idleInTransactionTimeoutMs: config.leaseMs })
  let url: string | undefined
  try {
    url = listeningUrl(options, config, opened.dialect)
  } catch (error) {
    await opened.close()
    throw error
  }
  if (!url || opened.dialect !== 'postgres') return opened
  let notifications: StoreNotifications
  try {
    notifications = listenForChanges({
      // The option's own name in errors: a bad URL given as `notifications` is that option's fault.
      connectionString: postgresConnection(url, {}, typeof options.notifications === 'string' ? 'notifications' : 'database').connectionString,
      schema: await opened.schema!(),
      label: redactUrl(url),
      ...listener,
    })
  } catch (error) {
    await opened.close()
    if ((error as { code?: string }).code === 'MODULE_NOT_FOUND') {
      throw new InvalidOptionError('notifications', redactUrl(url), 'a URL to listen on with the optional peer dependency `pg` installed (`npm install pg`), or false')
    }
    throw asStorageError('open the notification listener', error)
  }
  // The first attempt is awaited (an engine that can listen does so from its first call); a
  // failure is reported and the listener retries in the background while the engine polls.
  await notifications.ready
  return {
    ...opened,
    notifications,
    close: async () => {
      await notifications.close()
      await opened.close()
    },
  }
}

/** Where the engine listens: the `notifications` URL, else the `database` URL; none for a Kysely instance without one. */
function listeningUrl(options: EngineOptions, config: ResolvedConfig, dialect: OpenedStore['dialect']): string | undefined {
  if (typeof options.notifications === 'string') {
    if (dialect !== 'postgres') {
      throw new InvalidOptionError('notifications', redactUrl(options.notifications), `a URL only with a PostgreSQL database (this one is ${dialect}, which polls)`)
    }
    return options.notifications
  }
  if (!config.notifications) return undefined
  return typeof options.database === 'string' ? options.database : undefined
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
  return {
    store: new KyselyStore(opened.db, opened.verify, group),
    dialect: opened.dialect,
    ...(opened.dialect === 'postgres' ? { schema: () => storeSchema(opened.db) } : {}),
    close: () => opened.close(),
  }
}
