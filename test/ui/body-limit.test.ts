/**
 * A 64 MB POST through `toNodeListener` (issue 26): the handler counts the body while it
 * streams in and answers 413 past `maxBodyBytes` (default 32 MiB) without reading the rest; a
 * body declared larger than the limit is not read at all. Measured on a real HTTP server on
 * 127.0.0.1: what the server's socket read, and how much the process's resident memory grew
 * (it grew 271 MB before the limit). The client streams the body from one 64 KB buffer, so
 * the growth is the server's.
 */
import http from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { createChatHandler, defaultMaxBodyBytes, toNodeListener, type ChatHandler } from '../../src'
import { createHarness, type Harness } from '../support/harness'

let h: Harness
let handler: ChatHandler
let server: http.Server
afterEach(async () => {
  server?.closeAllConnections()
  await new Promise((resolve) => server?.close(resolve))
  handler?.close()
  await h?.close()
})

const MB = 1024 * 1024
const bodyBytes = 64 * MB

/**
 * A chat handler behind a real server; `bytesRead` resolves with what the server's socket read
 * from the first connection once it closes (a refused body's connection lingers half-closed
 * for two seconds after the answer, still unread, so that the answer is not reset).
 */
async function start(options: Parameters<typeof createChatHandler>[1] = {}) {
  h = await createHarness()
  handler = createChatHandler(h.engine, options)
  server = http.createServer(toNodeListener(handler))
  const bytesRead = new Promise<number>((resolve) => server.once('connection', (socket: Socket) => socket.on('close', () => resolve(socket.bytesRead))))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { port: (server.address() as AddressInfo).port, bytesRead }
}

/**
 * POSTs `bodyBytes` of a JSON-looking body in 64 KB writes (chunked, or with its length
 * declared), sampling the process's RSS meanwhile. Resolves with the answer and the peak growth.
 */
function post(port: number, declareLength: boolean): Promise<{ status: number; body: string; rssGrowth: number; connectionHeader: string | undefined }> {
  const chunk = Buffer.alloc(64 * 1024, 'a')
  const before = process.memoryUsage().rss
  let peak = before
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 2)
  return new Promise((resolve, reject) => {
    const req = http.request({
      host: '127.0.0.1',
      port,
      method: 'POST',
      path: '/api/chat',
      headers: { 'content-type': 'application/json', ...(declareLength ? { 'content-length': String(bodyBytes) } : {}) },
    })
    let written = 0
    let answered = false
    // The server answers, then closes, while the client may still be writing: a write error
    // after the answer is expected; one before it means the answer was lost.
    req.on('error', (error: NodeJS.ErrnoException) => {
      if (!answered || !['EPIPE', 'ECONNRESET'].includes(error.code ?? '')) reject(error)
    })
    req.on('response', (res) => {
      answered = true
      let body = ''
      res.on('data', (d) => (body += d))
      res.on('end', () => {
        clearInterval(sampler)
        peak = Math.max(peak, process.memoryUsage().rss)
        resolve({ status: res.statusCode!, body, rssGrowth: peak - before, connectionHeader: res.headers.connection })
      })
    })
    const write = () => {
      while (written < bodyBytes) {
        written += chunk.length
        const more = written === chunk.length ? req.write('{"id":"chat-big","messages":[{"role":"user","parts":[{"type":"text","text":"') : true
        if (!more || !req.write(chunk)) return void req.once('drain', write)
      }
      req.end()
    }
    write()
  })
}

test('a 64 MB POST streamed in is refused with 413 once it passes maxBodyBytes: the rest is not read, memory stays bounded, nothing is created', async () => {
  const started = await start()
  const result = await post(started.port, false)
  expect(result.status).toBe(413)
  expect(JSON.parse(result.body)).toEqual({ error: { name: 'RequestTooLargeError', message: `the request body is larger than maxBodyBytes (${defaultMaxBodyBytes} bytes)`, limit: defaultMaxBodyBytes } })
  expect(result.connectionHeader).toBe('close')
  const bytesRead = await started.bytesRead
  // The limit, plus what was in flight in the socket's buffers when the handler stopped reading.
  expect(bytesRead).toBeGreaterThan(defaultMaxBodyBytes)
  expect(bytesRead).toBeLessThan(defaultMaxBodyBytes + 4 * MB)
  expect(result.rssGrowth).toBeLessThan(defaultMaxBodyBytes + 32 * MB)
  expect(await h.engine.listSessions()).toEqual([])
  expect(h.server.calls).toBe(0)
  if (process.env.TURNCHART_MEASURE) console.log(`64 MB chunked POST: 413, server read ${(bytesRead / MB).toFixed(1)} MB, RSS grew ${(result.rssGrowth / MB).toFixed(1)} MB`)
}, 60_000)

test('a 64 MB POST that declares its length is refused with 413 before its body is read', async () => {
  const started = await start()
  const result = await post(started.port, true)
  expect(result.status).toBe(413)
  expect(JSON.parse(result.body)).toMatchObject({ error: { name: 'RequestTooLargeError', limit: defaultMaxBodyBytes } })
  const bytesRead = await started.bytesRead
  expect(bytesRead).toBeLessThan(2 * MB)
  expect(result.rssGrowth).toBeLessThan(16 * MB)
  expect(await h.engine.listSessions()).toEqual([])
  if (process.env.TURNCHART_MEASURE) console.log(`64 MB declared POST: 413, server read ${(bytesRead / MB).toFixed(2)} MB, RSS grew ${(result.rssGrowth / MB).toFixed(1)} MB`)
}, 60_000)

test('a smaller maxBodyBytes applies to useChat bodies sent through fetch; a body within it goes through', async () => {
  const { port } = await start({ maxBodyBytes: 4096 })
  h.server.text('fits')
  const url = `http://127.0.0.1:${port}/api/chat`
  const small = JSON.stringify({ id: 'chat-small', messages: [{ id: 'u1', role: 'user', parts: [{ type: 'text', text: 'hi' }] }] })
  const ok = await fetch(url, { method: 'POST', body: small })
  expect(ok.status).toBe(200)
  await ok.text()
  const large = JSON.stringify({ id: 'chat-large', messages: [{ id: 'u1', role: 'user', parts: [{ type: 'text', text: 'x'.repeat(5000) }] }] })
  const refused = await fetch(url, { method: 'POST', body: large })
  expect(refused.status).toBe(413)
  expect(await refused.json()).toMatchObject({ error: { name: 'RequestTooLargeError', limit: 4096 } })
  expect(await h.engine.getSession('chat-large')).toBeUndefined()
})
