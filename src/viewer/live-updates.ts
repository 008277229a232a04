/**
 * The viewer's live pages. Each open page holds one server-sent event stream
 * (`GET /api/live?session=<id>`): the session list and the watched session, sent at once and
 * again whenever they change. The server notices changes itself, whoever writes: while a page
 * is open it polls the database's change stamp (`ReadOnlyStore.changeStamp`: SQLite's
 * `data_version`, PostgreSQL's current snapshot), which costs no table read, and reads the
 * views again only when the stamp moved. A view is sent to a page only when it differs from
 * what that page last received.
 */
import type http from 'node:http'
import type { ReadOnlyStore } from '../store/backends/read-only-store'
import { sessionPage } from './page-views'
import { summarizeSessions } from './read-views'
import type { LiveEvents } from './wire'

export interface LiveUpdates {
  /** Turns `response` into an event stream of the session list and, when given, the session `sessionId`. */
  attach(response: http.ServerResponse, sessionId?: string): void
  /** Ends every stream and stops polling. */
  close(): void
}

interface Client {
  response: http.ServerResponse
  sessionId?: string
  /** What this page last received, by event name. */
  sent: Map<string, string>
}

export interface LiveUpdateOptions {
  /** How often the change stamp is read while a page is open. */
  pollMs: number
}

/**
 * @example
 * const live = createLiveUpdates(store, { pollMs: 100 })
 * live.attach(response, 'ses_01…')
 */
export function createLiveUpdates(store: ReadOnlyStore, options: LiveUpdateOptions): LiveUpdates {
  return new LivePages(store, options)
}

/** The open pages, the poll of the change stamp while any is open, and one read at a time. */
class LivePages implements LiveUpdates {
  readonly #clients = new Set<Client>()
  #timer: NodeJS.Timeout | undefined
  #stamp: string | undefined
  #refreshing: Promise<void> | undefined
  #again = false
  #closed = false

  constructor(
    private readonly store: ReadOnlyStore,
    private readonly options: LiveUpdateOptions,
  ) {}

  attach(response: http.ServerResponse, sessionId?: string): void {
    response.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      connection: 'keep-alive',
      'x-frame-options': 'DENY',
    })
    // After a lost connection the browser reconnects after this long, and gets everything again.
    response.write('retry: 1000\n\n')
    const client: Client = { response, sessionId, sent: new Map() }
    this.#clients.add(client)
    response.on('close', () => this.#detach(client))
    void this.#refresh()
    this.#schedule()
  }

  close(): void {
    this.#closed = true
    if (this.#timer) clearTimeout(this.#timer)
    for (const client of this.#clients) client.response.end()
    this.#clients.clear()
  }

  #detach(client: Client): void {
    this.#clients.delete(client)
    if (this.#clients.size > 0 || !this.#timer) return
    clearTimeout(this.#timer)
    this.#timer = undefined
    // The next page starts from a fresh stamp: nothing was watched in between.
    this.#stamp = undefined
  }

  #schedule(): void {
    if (!this.#closed && this.#clients.size > 0 && !this.#timer) this.#timer = setTimeout(() => void this.#poll(), this.options.pollMs).unref()
  }

  async #poll(): Promise<void> {
    this.#timer = undefined
    if (this.#closed || this.#clients.size === 0) return
    try {
      const next = await this.store.changeStamp()
      if (next !== this.#stamp) {
        this.#stamp = next
        await this.#refresh()
      }
    } catch {
      // The next poll tries again; a read that fails is reported to the pages by refresh().
    }
    this.#schedule()
  }

  /** One read at a time; a change noticed during a read is read again after it. */
  #refresh(): Promise<void> {
    if (this.#refreshing) {
      this.#again = true
      return this.#refreshing
    }
    this.#refreshing = (async () => {
      do {
        this.#again = false
        await this.#readAndSend()
      } while (this.#again && !this.#closed)
      this.#refreshing = undefined
    })()
    return this.#refreshing
  }

  /** Reads what the open pages show, once per session, and sends each page what changed. */
  async #readAndSend(): Promise<void> {
    const watchers = [...this.#clients]
    try {
      const sessions = await this.store.read(summarizeSessions)
      const pages = new Map<string, Awaited<ReturnType<typeof sessionPage>>>()
      for (const id of new Set(watchers.map((c) => c.sessionId).filter((id): id is string => id !== undefined))) {
        pages.set(id, await this.store.read((s) => sessionPage(s, id)))
      }
      for (const client of watchers) if (this.#clients.has(client)) sendViews(client, sessions, pages)
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error)
      for (const client of watchers) if (this.#clients.has(client)) send(client, 'failure', { message })
    }
  }
}

/** What a page shows: the session list, and its session (or that it is missing). */
function sendViews(client: Client, sessions: LiveEvents['sessions'], pages: Map<string, LiveEvents['session'] | undefined>): void {
  // After a failure the page gets everything again: that is how it knows the database answers.
  if (client.sent.has('failure')) client.sent.clear()
  send(client, 'sessions', sessions)
  if (client.sessionId === undefined) return
  const page = pages.get(client.sessionId)
  if (page) send(client, 'session', page)
  else send(client, 'missing', { session: client.sessionId })
}

/** Sends `data` as `event` when it differs from what the page last received. */
function send<K extends keyof LiveEvents>(client: Client, event: K, data: LiveEvents[K]): void {
  const text = JSON.stringify(data)
  if (client.sent.get(event) === text) return
  // A page shows one session: a new one replaces a missing notice, and the other way round.
  if (event === 'session') client.sent.delete('missing')
  if (event === 'missing') client.sent.delete('session')
  client.sent.set(event, text)
  client.response.write(`event: ${event}\ndata: ${text}\n\n`)
}
