/**
 * The backend seam, in the manner of Kysely's `Dialect`: what a backend provides to turnchart,
 * and nothing about any one of them. A backend is one folder under store/ (sqlite/, postgres/,
 * node-sqlite/, foreign/) and one line in backends/registry.ts. It takes the `database` values
 * it recognises and opens them either as its own `Store` (`{ store }`), or as a Kysely database
 * with the SQL specifics turnchart's migrations and reads need (`{ db, sql }`: the Kysely store,
 * kysely/, runs on it). What only some backends can do is an optional member: group commit,
 * notifications, the schema, read-only opening, online backup. Callers ask for the capability,
 * never for the backend's name.
 */
import type { Kysely, RawBuilder, Transaction } from 'kysely'
import type { NotificationListenerError } from '../core/errors'
import type { TurnchartDatabase } from './schema'
import type { StoreChanges } from './table-changes'
import type { Store } from './store'
import type { StoreNotifications } from './store-notifications'

/** Settings of the engine that a backend applies when it opens (each ignores those it has no use for). */
export interface OpenSettings {
  /** Milliseconds SQLite waits for a lock held by another connection. Default 5000. */
  busyTimeoutMs?: number
  /**
   * A transaction left idle longer than this is ended by the server (PostgreSQL's
   * `idle_in_transaction_session_timeout`), so an engine stalled inside one cannot hold the
   * turn's row lock past its lease. The engine passes its `leaseMs`.
   */
  idleInTransactionTimeoutMs?: number
}

/**
 * What turnchart's SQL needs to know of a dialect: the few types and statements that differ.
 * The migrations (migrations.ts) and the read-only store take it; nothing else branches on a dialect.
 */
export interface SqlDialect {
  /** The column type of ids: one that orders by bytes (ids sort by creation time). */
  readonly idType: 'text' | RawBuilder<unknown>
  /**
   * Runs `apply` in one transaction that no other process migrating the same database runs at
   * the same time (SQLite: `BEGIN IMMEDIATE` on one connection; PostgreSQL: an advisory lock,
   * the schema created first when missing).
   */
  migrateExclusively<T>(db: Kysely<TurnchartDatabase>, apply: (conn: Kysely<TurnchartDatabase>) => Promise<T>): Promise<T>
  /** Migration 0010: the triggers that push changes to listeners (PostgreSQL). Absent: the dialect's engines poll. */
  createNotifyTriggers?(db: Kysely<any>): Promise<void>
  /** Migration 0013: the turn trigger also notifies a turn released by its owner (a handoff). */
  notifyReleasedTurns?(db: Kysely<any>): Promise<void>
  /** Migration 0023: a change of a model's circuit notifies the listeners (PostgreSQL), who read it again only then. */
  notifyCircuits?(db: Kysely<any>): Promise<void>
  /**
   * Migration 0020: the transition log stored once, in the order of its key `(turn_id, seq)`
   * (SQLite: `WITHOUT ROWID`; a rowid table kept every row twice, in the table and in its
   * key's index, and a commit wrote a page of each). Absent: the table stays as it is
   * (PostgreSQL keeps a table and its key's index apart anyway).
   */
  transitionsByKey?(db: Kysely<any>): Promise<void>
  /** The names of the tables the connection sees (its schema's, on PostgreSQL). */
  tableNames(db: Kysely<any>, label: string): Promise<string[]>
  /**
   * A value that differs once another connection has committed, cheap enough to poll (SQLite's
   * `data_version`, PostgreSQL's current snapshot). It may move with no change to turnchart's
   * tables, never the other way round.
   */
  changeStamp(db: Kysely<any>): Promise<string>
}

/**
 * Group commit: transactions asked for together run in one and share its commit. A work still
 * succeeds or fails alone.
 */
export interface GroupCommitter {
  /**
   * Which transactions join: every one (SQLite, whose one writer runs them one after another
   * anyway), or only those that allow it (`{ shared: true }`: PostgreSQL, whose others run at
   * once on the pool, and must not wait behind a batch).
   */
  readonly joins: 'every' | 'shared'
  run<T>(work: (trx: Transaction<TurnchartDatabase>) => Promise<T>): Promise<T>
}

/** Where the engine's listener sends what goes wrong (once per outage). */
export interface ListenerHooks {
  onError(error: NotificationListenerError): void
  /** Removes secrets from a driver's message before it is reported. */
  redact(text: string): string
}

/**
 * An engine's liveness kept by the database (PostgreSQL: postgres/liveness.ts): held while the
 * engine's process lives, ended by the server when it dies, and read for other engines.
 */
export interface EngineLiveness {
  /** The marked owner id whose liveness is held (liveness-owner.ts). */
  readonly owner: string
  /** Whether it is held now (false while its session connects again). */
  readonly held: boolean
  /** Which of `owners` (marked owner ids) are alive now; rejects when it cannot tell. */
  liveOwners(owners: readonly string[]): Promise<ReadonlySet<string>>
  /** The owners, other than `except`, of unfinished turns whose leases hold but whose liveness ended. One round trip. */
  goneOwners(except: string): Promise<string[]>
  close(): Promise<void>
}

/** A Kysely database a backend opened (or adopted), with its SQL specifics and capabilities. */
export interface OpenedDatabase {
  db: Kysely<TurnchartDatabase>
  sql: SqlDialect
  /** Throws when the database can no longer be written safely (a SQLite file deleted under us). */
  verify?: () => void
  /** Capability: group commit (see `GroupCommitter`). Absent: each transaction commits alone. */
  groupCommit?: () => GroupCommitter
  /** Capability: what the store knows of its queue's and circuits' changes (table-changes.ts). Absent: they are read every time. */
  changes?: StoreChanges
  /** Capability: the schema turnchart's tables are in (PostgreSQL; its notifications' channel is named after it). */
  schema?: () => Promise<string>
  /**
   * Capability: pushes of other engines' writes, heard on a connection of its own to `url` (the
   * `notifications` option's URL, else the `database` URL; `option` is the one errors name).
   * Absent: the engines poll.
   */
  listen?(url: string, option: 'notifications' | 'database', hooks: ListenerHooks): Promise<StoreNotifications>
  /** Capability: holds the liveness of the engine `owner` (marked) on a session of its own (PostgreSQL opened from a URL). */
  holdLiveness?(owner: string): Promise<EngineLiveness>
  /** Capability: an online backup of the whole database into the new file `to`, while others write (SQLite's backup API). */
  backup?(to: string): Promise<void>
  /** Closes the connection (or pool) when turnchart opened it; a caller's Kysely instance stays open. */
  close(): Promise<void>
}

/** A store a backend opened that is no SQL database of turnchart's (the caller's `MemoryStore`, a third party's store). */
export interface OpenedOwnStore {
  store: Store
  close(): Promise<void>
}

/**
 * Capability: opening an existing database for reading only (the CLI's read commands, the
 * viewer): never created, never migrated, refused by the server or the file's mode when written.
 */
export interface ReadOnlyOpening {
  /** Whether `location` (a path or URL given to the CLI or the viewer) is this backend's. */
  accepts(location: string): boolean
  /** `location` as messages show it (no password). */
  label(location: string): string
  /** False when `location` surely holds no database (a file that does not exist). */
  exists(location: string): boolean
  /** How often a viewer polls `changeStamp` by default, in ms. */
  readonly pollMs: number
  open(location: string): OpenedDatabase
}

/**
 * One backend. `name` is what `OpenedStore.dialect` says; `accepts` is asked in the registry's
 * order, and the first backend that takes a `database` value opens it.
 */
export interface StoreBackend {
  readonly name: string
  /** Whether this backend takes this `database` value. It throws `InvalidOptionError` for a value that is its own but wrong. */
  accepts(database: unknown): boolean
  open(database: unknown, settings: OpenSettings): OpenedDatabase | OpenedOwnStore
  /** Capability: whether `url`, given as the `notifications` option, is one this backend listens on. */
  listensOn?(url: string): boolean
  /** Capability: read-only opening. */
  readOnly?: ReadOnlyOpening
}

/** Whether a backend opened a Kysely database (else a store of its own). */
export function isOpenedDatabase(opened: OpenedDatabase | OpenedOwnStore): opened is OpenedDatabase {
  return 'db' in opened
}
