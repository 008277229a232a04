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
  const clients = new Set<Client>()
  let timer: NodeJS.Timeout | undefined
  let stamp: string | undefined
  let refreshing: Promise<void> | undefined
  let again = false
  let closed = false

  const send = <K extends keyof LiveEvents>(client: Client, event: K, data: LiveEvents[K]) => {
    const text = JSON.stringify(data)
    if (client.sent.get(event) === text) return
    // A page shows one session: a new one replaces a missing notice, and the other way round.
    if (event === 'session') client.sent.delete('missing')
    if (event === 'missing') client.sent.delete('session')
    client.sent.set(event, text)
    client.response.write(`event: ${event}\ndata: ${text}\n\n`)
  }

  /** Reads what the open pages show, once per session, and sends each page what changed. */
  const readAndSend = async () => {
    const watchers = [...clients]
    try {
      const sessions = await store.read(summarizeSessions)
      const pages = new Map<string, Awaited<ReturnType<typeof sessionPage>>>()
      for (const id of new Set(watchers.map((c) => c.sessionId).filter((id): id is string => id !== undefined))) {
        pages.set(id, await store.read((s) => sessionPage(s, id)))
      }
      for (const client of watchers) {
        if (!clients.has(client)) continue
        // After a failure the page gets everything again: that is how it knows the database answers.
        if (client.sent.has('failure')) client.sent.clear()
        send(client, 'sessions', sessions)
        if (client.sessionId === undefined) continue
        const page = pages.get(client.sessionId)
        if (page) send(client, 'session', page)
        else send(client, 'missing', { session: client.sessionId })
      }
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error)
      for (const client of watchers) if (clients.has(client)) send(client, 'failure', { message })
    }
  }

  /** One read at a time; a change noticed during a read is read again after it. */
  const refresh = (): Promise<void> => {
    if (refreshing) {
      again = true
      return refreshing
    }
    refreshing = (async () => {
      do {
        again = false
        await readAndSend()
      } while (again && !closed)
      refreshing = undefined
    })()
    return refreshing
  }

  const poll = async () => {
    timer = undefined
    if (closed || clients.size === 0) return
    try {
      const next = await store.changeStamp()
      if (next !== stamp) {
        stamp = next
        await refresh()
      }
    } catch {
      // The next poll tries again; a read that fails is reported to the pages by refresh().
    }
    if (!closed && clients.size > 0 && !timer) timer = setTimeout(poll, options.pollMs).unref()
  }

  return {
    attach(response, sessionId) {
      response.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-store',
        connection: 'keep-alive',
        'x-frame-options': 'DENY',
      })
      // After a lost connection the browser reconnects after this long, and gets everything again.
      response.write('retry: 1000\n\n')
      const client: Client = { response, sessionId, sent: new Map() }
      clients.add(client)
      response.on('close', () => {
        clients.delete(client)
        if (clients.size === 0 && timer) {
          clearTimeout(timer)
          timer = undefined
          // The next page starts from a fresh stamp: nothing was watched in between.
          stamp = undefined
        }
      })
      void refresh()
      if (!timer) timer = setTimeout(poll, options.pollMs).unref()
    },
    close() {
      closed = true
      if (timer) clearTimeout(timer)
      for (const client of clients) client.response.end()
      clients.clear()
    },
  }
}
