/**
 * The engine's store: the `database` option opened by its backend (store/backends/registry.ts),
 * a SQL database's schema brought up to date and the Kysely store over it (with group commit
 * when the backend has it), a store of the caller's as it is; and the listening connection when
 * the backend pushes changes (notifications). A failure of the store is a `StorageError` naming
 * the step, and leaves no connection open; a failure of the listener only is reported, and the
 * engine polls.
 */
import type { ResolvedConfig } from '../config/resolved-config'
import type { EngineOptions } from '../config/options'
import { InvalidOptionError, type NotificationListenerError } from '../core/errors'
import { asStorageError } from './engine-calls'
import { isOpenedDatabase, type EngineLiveness, type OpenedDatabase, type OpenSettings } from '../store/backend'
import { openDatabase, type DatabaseOption } from '../store/backends/open-database'
import { KyselyStore } from '../store/kysely/kysely-store'
import { migrate } from '../store/migrations'
import { redactUrl } from '../store/redact-url'
import type { StoreNotifications } from '../store/store-notifications'
import type { OpenedStore } from '../store/store'

/** The engine's store, with its listening connection and its liveness when it has them. */
export interface EngineStore extends OpenedStore {
  /** Notifications of other engines' writes (PostgreSQL); undefined: the engine polls only. */
  notifications?: StoreNotifications
  /** The engine's liveness, held by the database (PostgreSQL from a URL); undefined: its leases alone say it lives. */
  liveness?: EngineLiveness
}

/**
 * @example
 * const { store, notifications, close } = await openEngineStore(options, config, { onError, redact })
 */
export async function openEngineStore(
  options: EngineOptions,
  config: ResolvedConfig,
  listener: { onError(error: NotificationListenerError): void; redact(text: string): string },
  liveness?: string,
): Promise<EngineStore> {
  const store = await openStoreWithDatabase(options.database, { busyTimeoutMs: options.busyTimeoutMs, idleInTransactionTimeoutMs: config.leaseMs })
  const held = liveness ? await holdLiveness(store, liveness) : undefined
  const opened = await openListener(store, options, config, listener).catch(async (error: unknown) => {
    await held?.close()
    throw error
  })
  if (!held) return opened
  return {
    ...opened,
    liveness: held,
    close: async () => {
      await held.close()
      await opened.close()
    },
  }
}

/** The liveness of the engine `owner`, when the database holds it and took it at once (else nothing: its leases say it lives). */
async function holdLiveness({ opened, database }: { opened: OpenedStore; database?: OpenedDatabase }, owner: string): Promise<EngineLiveness | undefined> {
  if (!database?.holdLiveness) return undefined
  const liveness = await database.holdLiveness(owner).catch(async (error: unknown) => {
    await opened.close()
    throw asStorageError('hold the engine\'s liveness', error)
  })
  if (liveness.held) return liveness
  await liveness.close()
  return undefined
}

/** The store with its listening connection, when the backend pushes changes (notifications). */
async function openListener(
  { opened, database }: { opened: OpenedStore; database?: OpenedDatabase },
  options: EngineOptions,
  config: ResolvedConfig,
  listener: { onError(error: NotificationListenerError): void; redact(text: string): string },
): Promise<EngineStore> {
  const url = typeof options.notifications === 'string' ? options.notifications : config.notifications && typeof options.database === 'string' ? options.database : undefined
  if (url === undefined) return opened
  if (!database?.listen) {
    if (typeof options.notifications !== 'string') return opened
    await opened.close()
    throw new InvalidOptionError('notifications', redactUrl(url), `a URL only with a database that pushes changes, PostgreSQL (this one is ${opened.dialect}, which polls)`)
  }
  let notifications: StoreNotifications
  try {
    // The first attempt is awaited (an engine that can listen does so from its first call); a
    // failure is reported and the listener retries in the background while the engine polls.
    notifications = await database.listen(url, typeof options.notifications === 'string' ? 'notifications' : 'database', listener)
  } catch (error) {
    await opened.close()
    throw asStorageError('open the notification listener', error)
  }
  return {
    ...opened,
    notifications,
    close: async () => {
      await notifications.close()
      await opened.close()
    },
  }
}

/**
 * The store of a `database` option, as the engine opens it (the conformance suite opens its
 * SQLite and PostgreSQL stores with it too). A store of the caller's (a `MemoryStore`, a third
 * party's) is theirs: closing does nothing to it, so other engines sharing it go on.
 *
 * @example
 * const { store, close } = await openStore('./agent.db')
 */
export async function openStore(database: DatabaseOption | undefined, settings: OpenSettings = {}): Promise<OpenedStore> {
  return (await openStoreWithDatabase(database, settings)).opened
}

async function openStoreWithDatabase(database: DatabaseOption | undefined, settings: OpenSettings): Promise<{ opened: OpenedStore; database?: OpenedDatabase }> {
  let opening: ReturnType<typeof openDatabase>
  try {
    opening = openDatabase(database, settings)
  } catch (error) {
    throw asStorageError('open the database', error)
  }
  const { backend, opened } = opening
  if (!isOpenedDatabase(opened)) return { opened: { store: opened.store, dialect: backend.name, close: () => opened.close() } }
  try {
    await migrate(opened.db, opened.sql)
  } catch (error) {
    await opened.close()
    throw asStorageError('migrate the database', error)
  }
  const store: OpenedStore = {
    store: new KyselyStore(opened.db, opened.verify, opened.groupCommit?.(), opened.changes),
    dialect: backend.name,
    ...(opened.schema ? { schema: opened.schema } : {}),
    ...(opened.backup ? { backup: opened.backup } : {}),
    close: () => opened.close(),
  }
  return { opened: store, database: opened }
}
