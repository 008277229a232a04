/**
 * Node's `http` in front of a Web-standard handler: builds a `Request` from the incoming message
 * (its body streamed as the handler reads it, its `signal` aborted when the client goes away)
 * and pipes the `Response` back, flushing the headers at once so event streams start without
 * delay. A body the handler leaves unread (it refused it: too large) is not read further, and
 * the connection is closed after the answer (half-closed first, so that the answer is not reset)
 * instead of being kept alive behind it.
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
      body: hasBody ? requestBody(req) : undefined,
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
        // The rest of the body stays unread: the connection cannot carry another request.
        if (hasBody && !req.complete) {
          res.setHeader('connection', 'close')
          lingerBeforeClosing(req)
        }
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

/** How long a connection whose body was left unread stays half-closed after the answer. */
const lingerMs = 2000

/**
 * Closes a connection whose request body is left unread without resetting it under the answer.
 * Node closes such a connection as soon as the answer is written, and closing a socket with
 * unread bytes sends a TCP reset: a client still sending its body then sees its write fail,
 * and may never read the 413 already on its way. So the server only half-closes (the answer,
 * then its end) and drops the connection `lingerMs` later, still without reading the rest.
 */
function lingerBeforeClosing(req: IncomingMessage): void {
  const socket = req.socket
  socket.destroySoon = () => {
    // Node has just set the unread body flowing to discard it: paused, the rest stays unread.
    req.pause()
    socket.end()
    const timer = setTimeout(() => socket.destroy(), lingerMs)
    timer.unref()
    socket.once('close', () => clearTimeout(timer))
  }
}

/**
 * The incoming body as a web stream that reads the socket only when the handler pulls. Its
 * `cancel` stops reading without destroying the socket (Node's own `Readable.toWeb` would
 * destroy it, and with it the answer the handler is about to send, e.g. a 413).
 */
function requestBody(req: IncomingMessage): ReadableStream<Uint8Array> {
  // A client that goes away mid-body makes `req` emit 'error': heard here, and by the stream below.
  req.on('error', () => undefined)
  return new ReadableStream<Uint8Array>({
    pull: (controller) =>
      new Promise<void>((resolve) => {
        const finish = () => {
          req.off('readable', onReadable)
          req.off('end', onEnd)
          req.off('error', onError)
          resolve()
        }
        const onReadable = () => {
          const chunk = req.read() as Buffer | null
          if (chunk === null) return
          controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength))
          finish()
        }
        const onEnd = () => {
          controller.close()
          finish()
        }
        const onError = (error: unknown) => {
          controller.error(error)
          finish()
        }
        if (req.readableEnded) return onEnd()
        req.on('readable', onReadable)
        req.on('end', onEnd)
        req.on('error', onError)
        onReadable()
      }),
    cancel: () => {
      req.pause()
    },
  })
}
