/**
 * The Stately inspector's relay for `demo --inspect`, bound to 127.0.0.1 (the stock
 * `createInspectorServer` of @statelyai/inspect listens on every interface, which would relay
 * prompts and tool outputs to the network). Same protocol: every WebSocket message is passed
 * to the other clients, the last 200 are replayed to a new one, and `/` serves a bridge page
 * that embeds Stately's hosted inspector UI (the one part that needs to be online).
 */
import http from 'node:http'
import { createRequire } from 'node:module'
import type net from 'node:net'
import { isLoopbackHost, isLoopbackOrigin } from '../core/loopback'

/** The hosted inspector UI the bridge page embeds. */
export const inspectorUiUrl = 'https://stately.ai/inspect'

export interface InspectorRelay {
  port: number
  /** The bridge page: `http://127.0.0.1:<port>` */
  url: string
  stop(): Promise<void>
}

interface WsLike {
  readyState: number
  send(data: string): void
  on(event: 'message', listener: (data: unknown) => void): void
}
interface WsServerLike {
  clients: Set<WsLike>
  on(event: 'connection', listener: (socket: WsLike) => void): void
  close(): void
}

/** `ws`, resolved the way @statelyai/inspect resolves it (it is that package's dependency). */
type WsServerOptions = { server: http.Server; verifyClient?: (info: { origin?: string; req: http.IncomingMessage }) => boolean }

function loadWs(): { WebSocketServer: new (options: WsServerOptions) => WsServerLike; OPEN: number } {
  const from = createRequire(require.resolve('@statelyai/inspect/server'))
  const ws = from('ws') as { WebSocketServer: new (options: WsServerOptions) => WsServerLike; OPEN?: number }
  return { WebSocketServer: ws.WebSocketServer, OPEN: ws.OPEN ?? 1 }
}

function bridgePage(port: number): string {
  return `<!doctype html>
<html><head><meta charset="utf-8"><title>turnchart · Stately inspector</title>
<style>html,body{height:100%;margin:0}iframe{width:100%;height:100%;border:0}</style></head>
<body>
<iframe id="inspector" src="${inspectorUiUrl}"></iframe>
<script>
  const iframe = document.getElementById('inspector')
  const buffer = []
  let connected = false
  window.addEventListener('message', (e) => {
    if (e.data && e.data.type === '@statelyai.connected') {
      connected = true
      for (const event of buffer.splice(0)) iframe.contentWindow.postMessage(event, '*')
    }
  })
  const ws = new WebSocket('ws://127.0.0.1:${port}')
  ws.onmessage = (event) => {
    const data = JSON.parse(event.data)
    if (connected) iframe.contentWindow.postMessage(data, '*')
    else buffer.push(data)
  }
</script>
</body></html>`
}

/**
 * Starts the relay on 127.0.0.1:`port`.
 *
 * @example
 * const relay = await startInspectorRelay(8080)
 * const inspector = createWebSocketInspector({ url: `ws://127.0.0.1:${relay.port}` })
 */
export async function startInspectorRelay(port: number): Promise<InspectorRelay> {
  const { WebSocketServer, OPEN } = loadWs()
  const bound = () => (server.address() as net.AddressInfo).port
  const server = http.createServer((request, response) => {
    if (!isLoopbackHost(request.headers.host, bound())) {
      response.writeHead(403, { 'content-type': 'text/plain' })
      return void response.end('loopback only')
    }
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
    response.end(bridgePage(bound()))
  })
  // A WebSocket is not bound by the same-origin policy: any page the user opens could otherwise
  // connect and receive the turns' prompts and tool outputs. Programs (no Origin) and the bridge page only.
  const wss = new WebSocketServer({ server, verifyClient: ({ origin, req }) => isLoopbackOrigin(origin, bound()) && isLoopbackHost(req.headers.host, bound()) })
  const recent: string[] = []
  wss.on('connection', (socket) => {
    for (const message of recent) socket.send(message)
    socket.on('message', (data) => {
      const message = String(data)
      recent.push(message)
      if (recent.length > 200) recent.shift()
      for (const client of wss.clients) if (client !== socket && client.readyState === OPEN) client.send(message)
    })
  })
  const sockets = new Set<net.Socket>()
  server.on('connection', (socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, '127.0.0.1', () => resolve())
  })
  return {
    port: bound(),
    url: `http://127.0.0.1:${bound()}`,
    async stop() {
      wss.close()
      for (const socket of sockets) socket.destroy()
      await new Promise((resolve) => server.close(resolve))
    },
  }
}
