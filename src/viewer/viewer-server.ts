/**
 * `turnchart view <db>`: an offline viewer served on 127.0.0.1 only. One static page (no CDN,
 * copied next to this module at build time) and a small JSON API read through the read-only
 * store: sessions, a session's conversation with its parts and turns, a turn's replay, and the
 * chart's states and edges (from the machine itself) to draw each turn's path on.
 */
import fs from 'node:fs'
import http from 'node:http'
import type net from 'node:net'
import path from 'node:path'
import { leafChart } from '../chart/chart-edges'
import { isLoopbackHost } from '../core/loopback'
import { openReadOnlyStore, type ReadOnlyStore } from '../store/read-only-store'
import { replayTurn, summarizeSessions, viewSession } from './read-views'

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
}

/** The chart as the page draws it: its states (final ones marked) and edges, from the machine. */
function chartShape() {
  const { states, edges } = leafChart()
  return { initial: 'idle', states, edges }
}

/** The page: next to this module in dist/ (copied by scripts/build.mjs), or in src/ under ts-node. */
function pageHtml(): string {
  return fs.readFileSync(path.join(__dirname, 'viewer-page.html'), 'utf8')
}

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
  const page = pageHtml()
  const routes: Array<[RegExp, (match: RegExpExecArray) => Promise<unknown>]> = [
    [/^\/api\/sessions$/, () => store.read(summarizeSessions)],
    [/^\/api\/sessions\/([\w-]+)$/, (m) => store.read((s) => viewSession(s, m[1]))],
    [/^\/api\/turns\/([\w-]+)$/, (m) => store.read((s) => replayTurn(s, m[1]))],
    [/^\/api\/chart$/, async () => chartShape()],
  ]
  const server = http.createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://127.0.0.1')
    const send = (status: number, type: string, body: string) => {
      // The page and its data stay on this machine: no caching, no framing by other origins.
      response.writeHead(status, { 'content-type': type, 'cache-control': 'no-store', 'x-frame-options': 'DENY' })
      response.end(body)
    }
    // Only this machine's own names: a page that rebinds its DNS name to 127.0.0.1 gets nothing.
    if (!isLoopbackHost(request.headers.host, (server.address() as net.AddressInfo).port)) return send(403, 'text/plain', 'loopback only')
    if (request.method !== 'GET') return send(405, 'text/plain', 'read-only')
    if (url.pathname === '/' || url.pathname === '/index.html') return send(200, 'text/html; charset=utf-8', page)
    for (const [pattern, handler] of routes) {
      const match = pattern.exec(url.pathname)
      if (!match) continue
      handler(match).then(
        (value) => (value === undefined ? send(404, 'application/json', JSON.stringify({ error: 'not found' })) : send(200, 'application/json', JSON.stringify(value))),
        (error: unknown) => send(500, 'application/json', JSON.stringify({ error: error instanceof Error ? error.message : String(error) })),
      )
      return
    }
    send(404, 'text/plain', 'not found')
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
    await store.close()
    throw error
  }
  const { port } = server.address() as net.AddressInfo
  return {
    url: `http://127.0.0.1:${port}/`,
    async close() {
      for (const socket of sockets) socket.destroy()
      await new Promise((resolve) => server.close(resolve))
      await store.close()
    },
  }
}
