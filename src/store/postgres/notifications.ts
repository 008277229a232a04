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
import { sql, type Kysely } from 'kysely'
import { NotificationListenerError } from '../../core/errors'
import { notificationChannel, quoteIdentifier } from './notify-triggers'
import { pgLoader } from './open-postgres'

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
  const Client = (pgLoader.load() as unknown as { Client: PgClientClass }).Client
  const channel = notificationChannel(options.schema)
  const watchTable = `${quoteIdentifier(options.schema)}.turnchart_watches`
  const retryMs = options.retryMs ?? 100
  const maxRetryMs = options.maxRetryMs ?? 5000
  const heartbeatMs = options.heartbeatMs ?? 10_000
  const watchTtlMs = options.watchTtlMs ?? 30_000

  const listeners = new Set<(change: StoreChange) => void>()
  /** Watched sessions: how many hold each, and the `until` this listener last wrote (to delete only its own). */
  const watches = new Map<string, { holders: number; until?: number }>()
  const waiting = new Set<(listening: boolean) => void>()
  let client: PgClient | undefined
  let listening = false
  let closed = false
  let outageReported = false
  let failures = 0
  let retry: NodeJS.Timeout | undefined
  let lastRefresh = Date.now()

  const emit = (change: StoreChange) => {
    for (const listener of [...listeners]) {
      try {
        listener(change)
      } catch (error) {
        options.onError(new NotificationListenerError(options.label, `a subscriber threw: ${options.redact(messageOf(error))}`))
      }
    }
  }
  const report = (error: unknown) => {
    if (outageReported || closed) return
    outageReported = true
    options.onError(new NotificationListenerError(options.label, options.redact(messageOf(error))))
  }
  const settleWaiting = (value: boolean) => {
    for (const resolve of [...waiting]) resolve(value)
    waiting.clear()
  }

  /** The current connection is gone: drop it, say so once, and open another after the backoff. */
  const fail = (failed: PgClient, error: unknown) => {
    if (failed !== client) return // an old connection's late event
    client = undefined
    listening = false
    failed.removeAllListeners()
    failed.on('error', () => {}) // what the dying socket still emits goes nowhere
    failed.connection?.stream?.destroy?.()
    report(error)
    schedule()
  }
  const schedule = () => {
    if (closed || retry) return
    const delay = Math.min(maxRetryMs, retryMs * 2 ** failures) * (0.75 + Math.random() / 4)
    failures++
    retry = setTimeout(() => {
      retry = undefined
      void connect()
    }, delay)
    retry.unref()
  }

  const connect = async () => {
    if (closed) return
    // No query may hang forever: a dead network otherwise holds LISTEN or a watch write.
    const next = new Client({
      connectionString: options.connectionString,
      // Names the idle connection in pg_stat_activity (an application_name in the URL wins).
      application_name: 'turnchart notifications',
      keepAlive: true,
      connectionTimeoutMillis: heartbeatMs,
      query_timeout: heartbeatMs,
    })
    client = next
    next.on('error', (error) => fail(next, error))
    next.on('end', () => fail(next, new Error('the connection ended')))
    next.on('notification', (message) => {
      if (message.channel !== channel || next !== client) return
      const change = parse(message.payload ?? '')
      if (change) emit(change)
    })
    try {
      await next.connect()
      detachFromEventLoop(next)
      await next.query(`listen ${quoteIdentifier(channel)}`)
      if (next !== client || closed) return void next.end().catch(() => undefined)
      listening = true
      failures = 0
      outageReported = false
      await writeWatches([...watches.keys()]).catch(() => undefined) // the refresh tries again
      settleWaiting(true)
      // What was sent while nobody listened (before the first connection too): each subscriber looks once.
      emit({ kind: 'missed' })
    } catch (error) {
      fail(next, error)
    }
  }

  /** Writes (or extends) the watches of `sessionIds` with the database's clock. */
  const writeWatches = async (sessionIds: string[]) => {
    const current = client
    if (!current || !listening || sessionIds.length === 0) return
    const { rows } = await current.query(
      `insert into ${watchTable} (session_id, until) select id, (extract(epoch from now()) * 1000)::bigint + $2 from unnest($1::text[]) id
       on conflict (session_id) do update set until = excluded.until returning session_id, until`,
      [sessionIds, watchTtlMs],
    )
    for (const row of rows) {
      const watch = watches.get(String(row.session_id))
      if (watch) watch.until = Number(row.until)
    }
  }

  const heartbeat = setInterval(() => {
    const current = client
    if (!current || !listening) return
    // query_timeout rejects a silent connection's query: it is then ended as dead.
    current.query('select 1').catch((error: unknown) => fail(current, error))
    // Watches are refreshed on the same beat when it is due (every third of their lifetime).
    if (Date.now() - lastRefresh >= watchTtlMs / 3) {
      lastRefresh = Date.now()
      writeWatches([...watches.keys()]).catch(() => undefined)
    }
  }, Math.min(heartbeatMs, watchTtlMs / 3))
  heartbeat.unref()

  const ready = connect().then(() => listening)

  return {
    subscribe(listener) {
      listeners.add(listener)
      return () => void listeners.delete(listener)
    },
    watch(sessionId) {
      const watch = watches.get(sessionId)
      if (watch) watch.holders++
      else {
        watches.set(sessionId, { holders: 1 })
        writeWatches([sessionId]).catch(() => undefined)
      }
      let released = false
      return () => {
        const held = watches.get(sessionId)
        if (released || !held) return
        released = true
        if (--held.holders > 0) return
        watches.delete(sessionId)
        // Only the row this listener wrote last: another watcher that refreshed since keeps its own.
        if (held.until !== undefined && client && listening) client.query(`delete from ${watchTable} where session_id = $1 and until = $2`, [sessionId, held.until]).catch(() => undefined)
      }
    },
    ready,
    get listening() {
      return listening
    },
    get backendPid() {
      return listening ? client?.processID : undefined
    },
    whenListening(timeoutMs) {
      if (listening) return Promise.resolve(true)
      if (closed) return Promise.resolve(false)
      return new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => done(false), timeoutMs)
        timer.unref()
        function done(value: boolean) {
          clearTimeout(timer)
          waiting.delete(done)
          resolve(value)
        }
        waiting.add(done)
      })
    },
    async close() {
      if (closed) return
      closed = true
      listening = false
      clearTimeout(retry)
      clearInterval(heartbeat)
      settleWaiting(false)
      listeners.clear()
      const last = client
      client = undefined
      if (!last) return
      last.removeAllListeners()
      last.on('error', () => {})
      await last.end().catch(() => undefined)
    },
  }
}

/** A payload (`c:<turnId>`, `h:<controlId>`, `s:<sessionId>`, `r:<turnId>`) as a change; anything else is ignored. */
function parse(payload: string): StoreChange | undefined {
  const id = payload.slice(2)
  if (!id || payload[1] !== ':') return undefined
  if (payload[0] === 'c') return { kind: 'control', turnId: id }
  if (payload[0] === 'h') return { kind: 'handled', controlId: id }
  if (payload[0] === 's') return { kind: 'session', sessionId: id }
  if (payload[0] === 'r') return { kind: 'released', turnId: id }
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
