/**
 * `turnchart view <db>`: an offline viewer served on 127.0.0.1 only. One self-contained page
 * (no CDN: built with the chart's layout and its script inlined, next to this module in dist/),
 * a live event stream per open page (live-updates.ts), and a small JSON API, all read through
 * the read-only store: sessions, a session's conversation with its parts and turns, a turn's
 * replay. Only GET: the viewer never writes.
 */
import { createHash } from 'node:crypto'
import fs from 'node:fs'
import http from 'node:http'
import type net from 'node:net'
import path from 'node:path'
import { isLoopbackHost } from '../core/loopback'
import { openReadOnlyStore, type ReadOnlyStore } from '../store/backends/read-only-store'
import { createLiveUpdates } from './live-updates'
import { sessionPage } from './page-views'
import { replayTurn, summarizeSessions } from './read-views'

export interface Viewer {
  /** `http://127.0.0.1:<port>/` */
  url: string
  close(): Promise<void>
}

export interface ViewerOptions {
  /** A SQLite file or a postgres:// URL (opened read-only). */
  database: string
  /** Label used in messages instead of `database` (a URL without its password). */
  label?: string
  /** 0 (default) picks a free port. */
  port?: number
  /** How often, while a page is open, the database is asked whether it changed. Default 100 ms (SQLite), 250 ms (PostgreSQL). */
  pollMs?: number
}

let builtFromSources: Promise<string> | undefined

/**
 * The page: built next to this module (dist/, by scripts/build.mjs; the tests' CLI bundle, by
 * their setup); from the TypeScript sources (ts-node, jest), built once per process.
 */
function pageHtml(): Promise<string> {
  const built = path.join(__dirname, 'viewer-page.html')
  if (fs.existsSync(built)) return fs.promises.readFile(built, 'utf8')
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  builtFromSources ??= (require('./build-page') as typeof import('./build-page')).buildViewerPage()
  return builtFromSources
}

/**
 * The page may run only its own inline script and talk only to this server: the browser
 * itself keeps it offline.
 */
function contentSecurityPolicy(html: string): string {
  const scripts = [...html.matchAll(/<script>([\s\S]*?)<\/script>/g)].map((m) => `'sha256-${createHash('sha256').update(m[1]).digest('base64')}'`)
  return `default-src 'none'; script-src ${scripts.join(' ') || "'none'"}; style-src 'unsafe-inline'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`
}

const notFoundPage = `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>Not found · turnchart viewer</title></head>
<body style="font: 15px/1.5 system-ui, sans-serif; margin: 2em auto; max-width: 36em; padding: 0 1em"><h1>Nothing here</h1><p>The viewer has no such page.</p><p><a href="/">← All sessions</a></p></body></html>`

/**
 * Starts the viewer on 127.0.0.1.
 *
 * @example
 * const viewer = await startViewer({ database: './agent.db' })
 * console.log(`open ${viewer.url}`)
 * await viewer.close()
 */
export async function startViewer(options: ViewerOptions): Promise<Viewer> {
  const store: ReadOnlyStore = await openReadOnlyStore(options.database, options.label)
  let page: string
  try {
    page = await pageHtml()
  } catch (error) {
    await store.close()
    throw error
  }
  const policy = contentSecurityPolicy(page)
  const live = createLiveUpdates(store, { pollMs: options.pollMs ?? store.pollMs })
  const routes: Array<[RegExp, (match: RegExpExecArray) => Promise<unknown>]> = [
    [/^\/api\/sessions$/, () => store.read(summarizeSessions)],
    [/^\/api\/sessions\/([\w-]+)$/, (m) => store.read((s) => sessionPage(s, m[1]))],
    [/^\/api\/turns\/([\w-]+)$/, (m) => store.read((s) => replayTurn(s, m[1]))],
  ]
  const server = http.createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://127.0.0.1')
    const send = (status: number, type: string, body: string) => {
      // The page and its data stay on this machine: no caching, no framing by other origins.
      const headers: http.OutgoingHttpHeaders = { 'content-type': type, 'cache-control': 'no-store', 'x-frame-options': 'DENY' }
      if (type.startsWith('text/html')) headers['content-security-policy'] = policy
      response.writeHead(status, headers)
      response.end(body)
    }
    // Only a page opened on this machine's own names may read it: a web site whose name was
    // pointed at 127.0.0.1 (DNS rebinding) sends its own name as Host and is refused.
    if (!isLoopbackHost(request.headers.host, (server.address() as net.AddressInfo).port)) return send(421, 'text/plain', 'this viewer answers on 127.0.0.1 and localhost only')
    if (request.method !== 'GET') return send(405, 'text/plain', 'read-only')
    if (url.pathname === '/' || url.pathname === '/index.html') return send(200, 'text/html; charset=utf-8', page)
    // Browsers ask for it unprompted; the page has none.
    if (url.pathname === '/favicon.ico') return send(204, 'image/x-icon', '')
    if (url.pathname === '/api/live') {
      const session = url.searchParams.get('session') ?? undefined
      if (session !== undefined && !/^[\w-]+$/.test(session)) return send(400, 'application/json', JSON.stringify({ error: 'not a session id' }))
      return live.attach(response, session)
    }
    for (const [pattern, handler] of routes) {
      const match = pattern.exec(url.pathname)
      if (!match) continue
      handler(match).then(
        (value) => (value === undefined ? send(404, 'application/json', JSON.stringify({ error: 'not found' })) : send(200, 'application/json', JSON.stringify(value))),
        (error: unknown) => send(500, 'application/json', JSON.stringify({ error: error instanceof Error ? error.message : String(error) })),
      )
      return
    }
    if (url.pathname.startsWith('/api/')) return send(404, 'application/json', JSON.stringify({ error: 'not found' }))
    send(404, 'text/html; charset=utf-8', notFoundPage)
  })
  const sockets = new Set<net.Socket>()
  server.on('connection', (socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
  })
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(options.port ?? 0, '127.0.0.1', () => resolve())
    })
  } catch (error) {
    live.close()
    await store.close()
    throw error
  }
  const { port } = server.address() as net.AddressInfo
  return {
    url: `http://127.0.0.1:${port}/`,
    async close() {
      live.close()
      for (const socket of sockets) socket.destroy()
      await new Promise((resolve) => server.close(resolve))
      await store.close()
    },
  }
}
