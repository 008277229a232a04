/**
 * Node's `http` in front of a Web-standard handler: builds a `Request` from the incoming message
 * (its body streamed, its `signal` aborted when the client goes away) and pipes the `Response`
 * back, flushing the headers at once so event streams start without delay.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'

/**
 * Adapts `handler` to `http.createServer`'s listener.
 *
 * @example
 * import http from 'node:http'
 * const handler = createChatHandler(engine)
 * http.createServer(toNodeListener(handler)).listen(3000, '127.0.0.1')
 */
export function toNodeListener(handler: (request: Request) => Promise<Response>): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    const gone = new AbortController()
    res.on('close', () => {
      if (!res.writableFinished) gone.abort()
    })
    const headers = new Headers()
    for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) headers.append(req.rawHeaders[i], req.rawHeaders[i + 1])
    const method = req.method ?? 'GET'
    const hasBody = method !== 'GET' && method !== 'HEAD'
    const request = new Request(new URL(req.url ?? '/', `http://${req.headers.host ?? '127.0.0.1'}`), {
      method,
      headers,
      body: hasBody ? (Readable.toWeb(req) as ReadableStream<Uint8Array>) : undefined,
      signal: gone.signal,
      // Node's fetch needs this for a streamed request body.
      ...(hasBody ? { duplex: 'half' } : {}),
    } as RequestInit)
    handler(request)
      .then(async (response) => {
        res.statusCode = response.status
        response.headers.forEach((value, name) => {
          if (name !== 'set-cookie') res.setHeader(name, value)
        })
        const cookies = response.headers.getSetCookie()
        if (cookies.length > 0) res.setHeader('set-cookie', cookies)
        res.flushHeaders()
        if (!response.body) return void res.end()
        await pipeline(Readable.fromWeb(response.body as import('node:stream/web').ReadableStream<Uint8Array>), res)
      })
      .catch(() => {
        if (!res.headersSent) res.statusCode = 500
        res.end()
      })
  }
}
