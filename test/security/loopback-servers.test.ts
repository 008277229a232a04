/**
 * The loopback servers a browser can still reach (issue 26's threat table): the viewer
 * (`turnchart view`) and the inspector relay (`turnchart demo --inspect`) listen on 127.0.0.1,
 * yet a page the user opens elsewhere could reach them by a DNS name rebound to 127.0.0.1 (its
 * requests then carry that name as Host), and any page may open a WebSocket to them. Both
 * answer only requests addressed to a loopback name, and the relay only WebSockets without an
 * Origin (programs) or from its own page.
 */
import http from 'node:http'
import { startInspectorRelay, type InspectorRelay } from '../../src/cli/inspector-relay'
import { isLoopbackHost, isLoopbackOrigin } from '../../src/core/loopback'
import { startViewer, type Viewer } from '../../src/viewer/viewer-server'
import { createHarness, type Harness } from '../support/harness'

// eslint-disable-next-line @typescript-eslint/no-require-imports
const WebSocket = require('ws') as new (url: string, options?: { origin?: string; headers?: Record<string, string> }) => {
  on(event: 'open' | 'error' | 'unexpected-response', listener: (...args: any[]) => void): void
  close(): void
}

/** A GET with the given Host header; resolves with the status and body. */
function getWithHost(port: number, pathName: string, host: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string; headers: http.IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: pathName, headers: { host, ...headers } }, (res) => {
      let body = ''
      res.on('data', (d) => (body += d))
      res.on('end', () => resolve({ status: res.statusCode!, body, headers: res.headers }))
    })
    req.on('error', reject)
    req.end()
  })
}

/** Whether a WebSocket with that Origin is accepted ('open') or refused (the HTTP status). */
function connect(port: number, origin?: string): Promise<'open' | number> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}`, origin ? { origin } : {})
    ws.on('open', () => {
      ws.close()
      resolve('open')
    })
    ws.on('unexpected-response', (_req: unknown, res: http.IncomingMessage) => resolve(res.statusCode!))
    ws.on('error', (error: Error) => (/Unexpected server response: (\d+)/.test(error.message) ? resolve(Number(RegExp.$1)) : reject(error)))
  })
}

let viewer: Viewer | undefined
let relay: InspectorRelay | undefined
let h: Harness | undefined
afterEach(async () => {
  await viewer?.close()
  await relay?.stop()
  await h?.close()
  viewer = relay = h = undefined
})

test('the viewer answers requests addressed to 127.0.0.1 or localhost, and 421 to any other Host (DNS rebinding)', async () => {
  h = await createHarness()
  await h.engine.createSession({ id: 'chat-secret', title: 'private' })
  viewer = await startViewer({ database: h.dbPath })
  const port = Number(new URL(viewer.url).port)
  for (const host of [`127.0.0.1:${port}`, `localhost:${port}`]) {
    const answer = await getWithHost(port, '/api/sessions', host)
    expect(answer.status).toBe(200)
    expect(answer.body).toContain('chat-secret')
  }
  // Another site's page may send the request, but its browser will not let it read the answer.
  const crossOrigin = await getWithHost(port, '/api/sessions', `127.0.0.1:${port}`, { origin: 'https://evil.example' })
  expect(crossOrigin.headers['access-control-allow-origin']).toBeUndefined()
  expect(crossOrigin.headers).toMatchObject({ 'x-frame-options': 'DENY', 'cache-control': 'no-store' })
  for (const host of [`evil.example:${port}`, `127.0.0.1.evil.example:${port}`, `127.0.0.1:${port + 1}`, `localhost`]) {
    const answer = await getWithHost(port, '/api/sessions', host)
    expect(answer.status).toBe(421)
    expect(answer.body).not.toContain('chat-secret')
  }
})

test('the inspector relay accepts WebSockets from programs and from its own page, and refuses other origins and hosts', async () => {
  relay = await startInspectorRelay(0)
  expect(await connect(relay.port)).toBe('open') // a Node client (the engine's inspector): no Origin
  expect(await connect(relay.port, `http://127.0.0.1:${relay.port}`)).toBe('open') // the bridge page
  expect(await connect(relay.port, 'https://evil.example')).toBe(401)
  expect(await connect(relay.port, `http://127.0.0.1:${relay.port + 1}`)).toBe(401)
  expect((await getWithHost(relay.port, '/', `evil.example:${relay.port}`)).status).toBe(403)
  expect((await getWithHost(relay.port, '/', `127.0.0.1:${relay.port}`)).body).toContain(`ws://127.0.0.1:${relay.port}`)
})

test('isLoopbackHost and isLoopbackOrigin name only this machine, on this port', () => {
  expect(isLoopbackHost('127.0.0.1:80', 80)).toBe(true)
  expect(isLoopbackHost('LOCALHOST:80', 80)).toBe(true)
  expect(isLoopbackHost('[::1]:80', 80)).toBe(true)
  expect(isLoopbackHost('127.0.0.1', 80)).toBe(false)
  expect(isLoopbackHost(undefined, 80)).toBe(false)
  expect(isLoopbackOrigin(undefined, 80)).toBe(true)
  expect(isLoopbackOrigin('http://localhost:80', 80)).toBe(true)
  expect(isLoopbackOrigin('null', 80)).toBe(false)
  expect(isLoopbackOrigin('http://localhost:80.evil.example', 80)).toBe(false)
})
