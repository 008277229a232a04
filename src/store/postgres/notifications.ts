/**
 * The engine's listening connection on PostgreSQL: one `pg` client of its own (not from the
 * pool: a pooled connection goes back to the pool, and LISTEN belongs to a session), listening
 * on the schema's channel (postgres/notify-triggers.ts says what is sent), turning payloads into
 * `StoreChange`s for whoever subscribed.
 *
 * It never throws at its user and never stops trying: a connection that is refused, dropped
 * (the server ended it, the network) or silent past a heartbeat is reported once per outage,
 * then opened again with backoff; once listening again, subscribers get `{ kind: 'missed' }` so
 * that each looks once for what was sent while nobody listened. Until then the engine's polls
 * (which run anyway) deliver everything, later.
 */
import { NotificationListenerError } from '../../core/errors'
import { notificationChannel, quoteIdentifier } from './notify-triggers'
import { pgLoader } from './open-postgres'
import { SessionWatches } from './session-watches'

export type { StoreChange, StoreNotifications } from '../store-notifications'
import type { StoreChange, StoreNotifications } from '../store-notifications'

export interface ListenOptions {
  /** The pg connection string of the listening connection (turnchart's URL parameters already removed). */
  connectionString: string
  /** The schema of turnchart's tables: the channel's name and the watch table's. */
  schema: string
  /** The URL as errors show it: no password. */
  label: string
  /** Where failures go (the engine's `onSubscriberError`); once per outage. */
  onError(error: NotificationListenerError): void
  /** Removes secrets from a driver's message before it is reported. */
  redact(text: string): string
  /** The first wait before reconnecting, doubled up to `maxRetryMs`. Default 100, 5000. */
  retryMs?: number
  maxRetryMs?: number
  /** A `select 1` this often; an answer later than this ends the connection as dead. Default 10000. */
  heartbeatMs?: number
  /** How long a watch lasts without its refresh (refreshed every third of it). Default 30000. */
  watchTtlMs?: number
}

/** What this module uses of a `pg` Client. */
interface PgClient {
  connect(): Promise<void>
  query(text: string, values?: unknown[]): Promise<{ rows: Array<Record<string, unknown>> }>
  end(): Promise<void>
  on(event: 'notification', listener: (message: { channel: string; payload?: string }) => void): unknown
  on(event: 'error', listener: (error: Error) => void): unknown
  on(event: 'end', listener: () => void): unknown
  removeAllListeners(): unknown
  readonly processID?: number
  /** pg's connection; its socket is unreferenced (see `detachFromEventLoop`). */
  readonly connection?: { stream?: { unref?(): void; destroy?(): void } }
}
type PgClientClass = new (config: Record<string, unknown>) => PgClient

/**
 * Opens the listening connection (in the background: it retries until `close`).
 *
 * @example
 * const notifications = listenForChanges({ connectionString, schema: 'agent', label, onError, redact })
 * const off = notifications.subscribe((change) => change.kind === 'control' && poller.wake())
 */
export function listenForChanges(options: ListenOptions): StoreNotifications {
  return new ChangeListener(options)
}

/**
 * The listening connection's life: connect and LISTEN, a heartbeat that ends a silent
 * connection, a failure reported once per outage and followed by a reconnect with backoff;
 * the subscribers told each change (and `missed` after each reconnect); the sessions watched
 * (session-watches.ts).
 */
class ChangeListener implements StoreNotifications {
  readonly ready: Promise<boolean>
  readonly #options: ListenOptions
  readonly #Client: PgClientClass
  readonly #channel: string
  readonly #listeners = new Set<(change: StoreChange) => void>()
  readonly #waiting = new Set<(listening: boolean) => void>()
  readonly #watches: SessionWatches
  readonly #heartbeat: NodeJS.Timeout
  #client: PgClient | undefined
  #listening = false
  #closed = false
  #outageReported = false
  #failures = 0
  #retry: NodeJS.Timeout | undefined

  constructor(options: ListenOptions) {
    this.#options = options
    this.#Client = (pgLoader.load() as unknown as { Client: PgClientClass }).Client
    this.#channel = notificationChannel(options.schema)
    const heartbeatMs = options.heartbeatMs ?? 10_000
    const watchTtlMs = options.watchTtlMs ?? 30_000
    const query = () => (this.#client && this.#listening ? this.#client.query.bind(this.#client) : undefined)
    this.#watches = new SessionWatches(`${quoteIdentifier(options.schema)}.turnchart_watches`, watchTtlMs, query)
    this.#heartbeat = setInterval(() => this.#beat(), Math.min(heartbeatMs, watchTtlMs / 3))
    this.#heartbeat.unref()
    this.ready = this.#connect().then(() => this.#listening)
  }

  get listening(): boolean {
    return this.#listening
  }

  get backendPid(): number | undefined {
    return this.#listening ? this.#client?.processID : undefined
  }

  subscribe(listener: (change: StoreChange) => void): () => void {
    this.#listeners.add(listener)
    return () => void this.#listeners.delete(listener)
  }

  watch(sessionId: string): () => void {
    return this.#watches.hold(sessionId)
  }

  whenListening(timeoutMs: number): Promise<boolean> {
    if (this.#listening) return Promise.resolve(true)
    if (this.#closed) return Promise.resolve(false)
    return new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => done(false), timeoutMs)
      timer.unref()
      const done = (value: boolean) => {
        clearTimeout(timer)
        this.#waiting.delete(done)
        resolve(value)
      }
      this.#waiting.add(done)
    })
  }

  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    this.#listening = false
    clearTimeout(this.#retry)
    clearInterval(this.#heartbeat)
    this.#settleWaiting(false)
    this.#listeners.clear()
    const last = this.#client
    this.#client = undefined
    if (!last) return
    last.removeAllListeners()
    last.on('error', () => {})
    await last.end().catch(() => undefined)
  }

  async #connect(): Promise<void> {
    if (this.#closed) return
    const next = this.#open()
    try {
      await next.connect()
      detachFromEventLoop(next)
      await next.query(`listen ${quoteIdentifier(this.#channel)}`)
      if (next !== this.#client || this.#closed) return void next.end().catch(() => undefined)
      this.#listening = true
      this.#failures = 0
      this.#outageReported = false
      await this.#watches.writeAll().catch(() => undefined) // the refresh tries again
      this.#settleWaiting(true)
      // What was sent while nobody listened (before the first connection too): each subscriber looks once.
      this.#emit({ kind: 'missed' })
    } catch (error) {
      this.#fail(next, error)
    }
  }

  /** A new connection, the current one from now, its events heard. No query may hang forever: a dead network otherwise holds LISTEN or a watch write. */
  #open(): PgClient {
    const heartbeatMs = this.#options.heartbeatMs ?? 10_000
    const next = new this.#Client({
      connectionString: this.#options.connectionString,
      // Names the idle connection in pg_stat_activity (an application_name in the URL wins).
      application_name: 'turnchart notifications',
      keepAlive: true,
      connectionTimeoutMillis: heartbeatMs,
      query_timeout: heartbeatMs,
    })
    this.#client = next
    next.on('error', (error) => this.#fail(next, error))
    next.on('end', () => this.#fail(next, new Error('the connection ended')))
    next.on('notification', (message) => {
      if (message.channel !== this.#channel || next !== this.#client) return
      const change = parse(message.payload ?? '')
      if (change) this.#emit(change)
    })
    return next
  }

  /** The heartbeat: a `select 1` (query_timeout rejects a silent connection's: it is then ended as dead), and the watches refreshed when due. */
  #beat(): void {
    const current = this.#client
    if (!current || !this.#listening) return
    current.query('select 1').catch((error: unknown) => this.#fail(current, error))
    this.#watches.refreshIfDue()
  }

  /** The current connection is gone: drop it, say so once, and open another after the backoff. */
  #fail(failed: PgClient, error: unknown): void {
    if (failed !== this.#client) return // an old connection's late event
    this.#client = undefined
    this.#listening = false
    failed.removeAllListeners()
    failed.on('error', () => {}) // what the dying socket still emits goes nowhere
    failed.connection?.stream?.destroy?.()
    this.#report(error)
    this.#schedule()
  }

  #schedule(): void {
    if (this.#closed || this.#retry) return
    const { retryMs = 100, maxRetryMs = 5000 } = this.#options
    const delay = Math.min(maxRetryMs, retryMs * 2 ** this.#failures) * (0.75 + Math.random() / 4)
    this.#failures++
    this.#retry = setTimeout(() => {
      this.#retry = undefined
      void this.#connect()
    }, delay)
    this.#retry.unref()
  }

  #emit(change: StoreChange): void {
    for (const listener of [...this.#listeners]) {
      try {
        listener(change)
      } catch (error) {
        this.#options.onError(new NotificationListenerError(this.#options.label, `a subscriber threw: ${this.#options.redact(messageOf(error))}`))
      }
    }
  }

  #report(error: unknown): void {
    if (this.#outageReported || this.#closed) return
    this.#outageReported = true
    this.#options.onError(new NotificationListenerError(this.#options.label, this.#options.redact(messageOf(error))))
  }

  #settleWaiting(value: boolean): void {
    for (const resolve of [...this.#waiting]) resolve(value)
    this.#waiting.clear()
  }
}

/** A payload (`c:<turnId>`, `h:<controlId>`, `s:<sessionId>`, `r:<turnId>`, `m:<model>`) as a change; anything else is ignored. */
function parse(payload: string): StoreChange | undefined {
  const id = payload.slice(2)
  if (!id || payload[1] !== ':') return undefined
  if (payload[0] === 'c') return { kind: 'control', turnId: id }
  if (payload[0] === 'h') return { kind: 'handled', controlId: id }
  if (payload[0] === 's') return { kind: 'session', sessionId: id }
  if (payload[0] === 'r') return { kind: 'released', turnId: id }
  if (payload[0] === 'm') return { kind: 'circuit', model: id }
  return undefined
}

/**
 * The listening socket does not keep the process alive: an engine that runs no turn lets its
 * process exit as it did before notifications (while turns run, the control poll's timer holds
 * it, as documented in docs/deployment.md).
 */
function detachFromEventLoop(client: PgClient): void {
  client.connection?.stream?.unref?.()
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}
