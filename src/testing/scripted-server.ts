/**
 * A real HTTP server that speaks the OpenAI chat-completions streaming protocol
 * (`POST /v1/chat/completions`) and the Anthropic Messages streaming protocol
 * (`POST /v1/messages`), and answers each call with the next scripted reply, in the protocol
 * of the path it arrived on. Tests point an AI SDK provider
 * (`createOpenAICompatible({ baseURL: server.url, ... })`, `createAnthropic({ baseURL: server.url, ... })`)
 * at it, so the whole HTTP, SSE and parsing path of the SDK runs for real instead of a mocked model.
 *
 * Only node built-ins are used, so it can ship in `turnchart/testing` without
 * adding dependencies.
 */
import * as http from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { randomBytes } from 'node:crypto'
import { DEFAULT_USAGE, type RawReply, type RecordedRequest, type ScriptProtocol, type ScriptReply, type ScriptUsage, type StreamReply } from './scripted-replies'
import type { ProtocolWriter, StreamContext } from './scripted-stream'
import { OpenAIChatWriter } from './scripted-openai-chat'
import { ResponsesWriter } from './scripted-responses'
import { AnthropicWriter } from './scripted-anthropic'
import { GeminiWriter } from './scripted-gemini'

export type * from './scripted-replies'

/** Each protocol's writer of a streamed reply. */
const writers: Record<ScriptProtocol, new (context: StreamContext) => ProtocolWriter> = {
  'openai-chat': OpenAIChatWriter,
  'openai-responses': ResponsesWriter,
  anthropic: AnthropicWriter,
  google: GeminiWriter,
}

/** The protocol of a request path (under the server's `url`, which ends in `/v1`). */
function protocolOf(path: string): ScriptProtocol | undefined {
  if (path === '/v1/chat/completions') return 'openai-chat'
  if (path === '/v1/responses') return 'openai-responses'
  if (path === '/v1/messages') return 'anthropic'
  if (/^\/v1\/models\/[^/]+:streamGenerateContent$/.test(path)) return 'google'
  return undefined
}

export interface ScriptedServer {
  /** `http://127.0.0.1:PORT/v1`, the `baseURL` for `createOpenAICompatible` and `createAnthropic`. */
  readonly url: string
  /** Number of model calls received (any protocol). */
  readonly calls: number
  readonly requests: RecordedRequest[]
  /**
   * Queue raw replies, answered in order, one per call.
   * @example server.push({ type: 'stream', chunks: [{ text: 'hi' }], end: 'reset' })
   */
  push(...replies: ScriptReply[]): this
  /**
   * Queue a text reply, split into `deltas` pieces (default: one piece per word).
   * @example server.text('Hello world', { usage: { input: 3, output: 2 } })
   */
  text(text: string, options?: { usage?: ScriptUsage; deltas?: number; finish?: string }): this
  /**
   * Queue a reply with reasoning, optionally followed by text.
   * @example server.reasoning('Let me think', 'The answer is 4')
   */
  reasoning(reasoning: string, text?: string, options?: { usage?: ScriptUsage }): this
  /**
   * Queue a reply with one tool call (finish reason `tool_calls`), optionally preceded by text.
   * The id defaults to `call_<n>`, n counting the tool calls queued on this server (from 1).
   * @example server.tool('bash', { cmd: 'ls' }, { id: 'call_ls' })
   */
  tool(name: string, input: unknown, options?: { id?: string; text?: string; usage?: ScriptUsage }): this
  /**
   * Queue a reply with several parallel tool calls (indices 0..k-1).
   * @example server.tools([{ name: 'read', input: { path: 'a' } }, { name: 'read', input: { path: 'b' } }])
   */
  tools(calls: Array<{ name: string; input: unknown; id?: string }>, options?: { usage?: ScriptUsage }): this
  /**
   * Queue an HTTP error reply.
   * @example server.error(429, { error: { message: 'slow down' } }, { 'retry-after': '1' })
   */
  error(status: number, body: unknown, headers?: Record<string, string>): this
  /**
   * Queue a reply that never answers (abort it from the client, or `close()` the server).
   * @example server.hang()
   */
  hang(): this
  /**
   * Resolve when the n-th call (1-based) has arrived, immediately if it already has.
   * @example const { body } = await server.waitForCall(1)
   */
  waitForCall(n: number, timeoutMs?: number): Promise<RecordedRequest>
  /**
   * Replies still queued.
   * @example expect(server.pending()).toBe(0)
   */
  pending(): number
  /**
   * End hanging responses, destroy open sockets and close the server.
   * @example afterEach(() => server.close())
   */
  close(): Promise<void>
}

/** Split text in word-ish pieces (whitespace stays attached), or in `deltas` even pieces. */
function splitText(text: string, deltas?: number): string[] {
  if (text === '') return []
  if (deltas !== undefined && deltas >= 1) {
    const count = Math.min(Math.floor(deltas), text.length)
    const size = Math.ceil(text.length / count)
    const pieces: string[] = []
    for (let i = 0; i < text.length; i += size) pieces.push(text.slice(i, i + size))
    return pieces
  }
  const words = text.match(/\s*\S+\s*/g)
  return words && words.length > 0 ? words : [text]
}

interface Waiter {
  n: number
  resolve: (request: RecordedRequest) => void
  reject: (error: Error) => void
  timer: NodeJS.Timeout
}

class ScriptedServerImpl implements ScriptedServer {
  readonly requests: RecordedRequest[] = []
  private readonly queue: ScriptReply[] = []
  private readonly waiters = new Set<Waiter>()
  private readonly sockets = new Set<Socket>()
  /** Responses still open (streaming, hanging); ended by `close()` so it never waits on them. */
  private readonly open = new Map<http.ServerResponse, { sentHeaders: boolean }>()
  /** Pending `delayMs` waits; `close()` cuts them short so no timer outlives the server. */
  private readonly sleeps = new Set<() => void>()
  private toolCounter = 0
  private chunkCounter = 0
  /** A random tag of this server's ids (unique across servers), drawn once: a draw per chunk cost 10 µs. */
  private readonly idTag = randomBytes(4).toString('hex')
  private closing: Promise<void> | undefined

  constructor(private readonly server: http.Server) {
    server.on('connection', (socket) => {
      this.sockets.add(socket)
      // A client that aborts mid-stream resets the socket; that must not crash the process.
      socket.on('error', () => {})
      socket.on('close', () => this.sockets.delete(socket))
    })
    server.on('request', (req, res) => this.handle(req, res))
  }

  get url(): string {
    const address = this.server.address() as AddressInfo
    return `http://127.0.0.1:${address.port}/v1`
  }

  get calls(): number {
    return this.requests.length
  }

  push(...replies: ScriptReply[]): this {
    // Tool ids are fixed at queue time so a test knows them from the order of its script.
    for (const reply of replies) {
      if (reply.type !== 'stream') {
        this.queue.push(reply)
        continue
      }
      const chunks = reply.chunks.map((chunk) => {
        if (!('tool' in chunk)) return chunk
        this.toolCounter += 1
        return { tool: { ...chunk.tool, id: chunk.tool.id ?? `call_${this.toolCounter}` } }
      })
      this.queue.push({ ...reply, chunks })
    }
    return this
  }

  text(text: string, options: { usage?: ScriptUsage; deltas?: number; finish?: string } = {}): this {
    return this.push({
      type: 'stream',
      chunks: splitText(text, options.deltas).map((piece) => ({ text: piece })),
      usage: options.usage,
      finish: options.finish,
    })
  }

  reasoning(reasoning: string, text?: string, options: { usage?: ScriptUsage } = {}): this {
    return this.push({
      type: 'stream',
      chunks: [
        ...splitText(reasoning).map((piece) => ({ reasoning: piece })),
        ...splitText(text ?? '').map((piece) => ({ text: piece })),
      ],
      usage: options.usage,
    })
  }

  tool(name: string, input: unknown, options: { id?: string; text?: string; usage?: ScriptUsage } = {}): this {
    return this.push({
      type: 'stream',
      chunks: [...splitText(options.text ?? '').map((piece) => ({ text: piece })), { tool: { name, input, id: options.id } }],
      usage: options.usage,
    })
  }

  tools(calls: Array<{ name: string; input: unknown; id?: string }>, options: { usage?: ScriptUsage } = {}): this {
    return this.push({ type: 'stream', chunks: calls.map((call) => ({ tool: { ...call } })), usage: options.usage })
  }

  error(status: number, body: unknown, headers?: Record<string, string>): this {
    return this.push({ type: 'error', status, body, headers })
  }

  hang(): this {
    return this.push({ type: 'hang' })
  }

  waitForCall(n: number, timeoutMs = 10000): Promise<RecordedRequest> {
    const arrived = this.requests[n - 1]
    if (arrived) return Promise.resolve(arrived)
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        n,
        resolve,
        reject,
        timer: setTimeout(() => {
          this.waiters.delete(waiter)
          reject(new Error(`scripted server: waited ${timeoutMs}ms for call ${n}, but only ${this.calls} call(s) arrived`))
        }, timeoutMs),
      }
      this.waiters.add(waiter)
    })
  }

  pending(): number {
    return this.queue.length
  }

  close(): Promise<void> {
    this.closing ??= new Promise<void>((resolve) => {
      // Pending waiters would otherwise keep their timers (and jest) alive.
      for (const waiter of this.waiters) {
        clearTimeout(waiter.timer)
        waiter.reject(new Error(`scripted server: closed while waiting for call ${waiter.n} (${this.calls} call(s) arrived)`))
      }
      this.waiters.clear()
      for (const [res, state] of this.open) {
        // A stream already started can end cleanly; a hang without a status line can only be cut.
        if (state.sentHeaders) res.end()
        else res.socket?.destroy()
      }
      this.open.clear()
      for (const wake of this.sleeps) wake()
      this.server.close(() => resolve())
      // Keep-alive connections would make server.close() wait for their idle timeout.
      this.server.closeAllConnections?.()
      for (const socket of this.sockets) socket.destroy()
      this.sockets.clear()
    })
    return this.closing
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    req.on('error', () => {})
    res.on('error', () => {})
    const path = (req.url ?? '').split('?')[0]
    const protocol = protocolOf(path)
    if (req.method !== 'POST' || protocol === undefined) {
      req.resume()
      res.writeHead(404, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ error: { message: `scripted server: no route ${req.method} ${req.url}`, type: 'not_found' } }))
      return
    }
    const parts: Buffer[] = []
    req.on('data', (part: Buffer) => parts.push(part))
    req.on('end', () => {
      const text = Buffer.concat(parts).toString('utf8')
      let body: unknown = text
      try {
        body = JSON.parse(text)
      } catch {
        // keep the raw text: a test may want to see what a broken client sent
      }
      const request: RecordedRequest = { protocol, body, headers: { ...req.headers }, call: this.requests.length + 1, url: req.url ?? '', at: Date.now() }
      this.requests.push(request)
      for (const waiter of this.waiters) {
        if (waiter.n <= request.call) {
          clearTimeout(waiter.timer)
          this.waiters.delete(waiter)
          waiter.resolve(this.requests[waiter.n - 1])
        }
      }
      const reply = this.queue.shift()
      if (!reply) {
        // 400, not 5xx: an engine under test then fails fast instead of retrying.
        const error = { message: `scripted server: no reply queued for call ${request.call}`, type: 'invalid_request_error' }
        res.writeHead(400, { 'content-type': 'application/json' })
        const bodies = { anthropic: { type: 'error', error }, google: { error: { code: 400, message: error.message, status: 'INVALID_ARGUMENT' } }, 'openai-chat': { error }, 'openai-responses': { error } }
        res.end(JSON.stringify(bodies[protocol]))
        return
      }
      const model =
        typeof (body as { model?: unknown })?.model === 'string'
          ? (body as { model: string }).model
          : (/^\/v1\/models\/([^/:]+)/.exec(path)?.[1] ?? 'scripted') // Gemini names the model in the path
      this.answer(reply, req, res, model, protocol, request).catch(() => {
        // the client went away mid-reply; nothing to report
      })
    })
  }

  private async answer(reply: ScriptReply, req: http.IncomingMessage, res: http.ServerResponse, model: string, protocol: ScriptProtocol, request: RecordedRequest): Promise<void> {
    if (reply.type === 'error') {
      const body = typeof reply.body === 'function' ? (reply.body as (r: RecordedRequest) => unknown)(request) : reply.body
      res.writeHead(reply.status, { 'content-type': 'application/json', ...reply.headers })
      res.end(typeof body === 'string' ? body : JSON.stringify(body))
      return
    }
    const state = { sentHeaders: false }
    this.open.set(res, state)
    res.on('close', () => this.open.delete(res))
    if (reply.type === 'hang') return
    if (reply.type === 'raw') return this.answerRaw(reply, req, res, state)

    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', ...reply.headers })
    // Send the status line now so a client sees the stream start even if nothing follows.
    res.flushHeaders()
    state.sentHeaders = true
    const gone = () => res.destroyed || res.writableEnded || !this.open.has(res)
    const context: StreamContext = {
      model,
      request,
      usage: reply.usage ?? DEFAULT_USAGE,
      write: (text) => void (gone() ? undefined : res.write(text)),
      pause: async () => {
        if (reply.delayMs) await this.sleep(reply.delayMs)
      },
      nextId: () => ++this.chunkCounter,
      idTag: this.idTag,
    }
    return this.play(reply, new writers[protocol](context), context, { req, res, gone })
  }

  /** Plays a streamed reply's chunks through its protocol's writer: the delays, the holds, the fault or the end. */
  private async play(reply: StreamReply, writer: ProtocolWriter, context: StreamContext, to: { req: http.IncomingMessage; res: http.ServerResponse; gone(): boolean }): Promise<void> {
    writer.start?.()
    for (const [i, chunk] of reply.chunks.entries()) {
      if (i > 0) await context.pause()
      if (reply.holdBefore?.chunk === i) await this.held(reply.holdBefore)
      if (to.gone()) return
      if ('text' in chunk) writer.text(chunk.text)
      else if ('reasoning' in chunk) writer.reasoning(chunk.reasoning, chunk.signature)
      else if ('raw' in chunk) writer.raw(typeof chunk.raw === 'function' ? chunk.raw(context.request) : chunk.raw)
      else await writer.tool(chunk.tool)
    }
    if (reply.chunks.length > 0) await context.pause()
    if (to.gone() || faultAtEnd(reply.end ?? 'done', to.req, to.res)) return
    writer.end(reply.finish, reply.chunks.some((chunk) => 'tool' in chunk))
    to.res.end()
  }

  private async answerRaw(reply: RawReply, req: http.IncomingMessage, res: http.ServerResponse, state: { sentHeaders: boolean }): Promise<void> {
    res.writeHead(reply.status ?? 200, { ...reply.headers })
    res.flushHeaders()
    state.sentHeaders = true
    const gone = () => res.destroyed || res.writableEnded || !this.open.has(res)
    const pieces = typeof reply.body === 'string' ? [reply.body] : reply.body
    for (const [i, piece] of pieces.entries()) {
      if (i > 0 && reply.delayMs) await this.sleep(reply.delayMs)
      if (gone()) return
      res.write(piece)
    }
    if (gone()) return
    const end = reply.end ?? 'close'
    if (end === 'hang') return
    if (end === 'reset') req.socket.destroy()
    else res.end()
  }

  /** Resolves when a reply's hold opens, or at `close()`. (Awaited only where a hold is: no extra tick between other chunks.) */
  private held(hold: NonNullable<StreamReply['holdBefore']>): Promise<void> {
    return new Promise((resolve) => {
      const wake = () => {
        this.sleeps.delete(wake)
        resolve()
      }
      this.sleeps.add(wake)
      Promise.resolve(hold.until).then(wake, wake)
    })
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer)
        this.sleeps.delete(wake)
        resolve()
      }
      const timer = setTimeout(wake, ms)
      this.sleeps.add(wake)
    })
  }
}

/**
 * Start a scripted OpenAI-compatible server on 127.0.0.1 (port 0 picks a free port).
 * @example
 * const server = await startScriptedServer()
 * server.text('Hello world')
 * const provider = createOpenAICompatible({ name: 'test', baseURL: server.url, apiKey: 'k', includeUsage: true })
 * const result = streamText({ model: provider('m'), prompt: 'hi' })
 * await server.close()
 */
export function startScriptedServer(options: { port?: number } = {}): Promise<ScriptedServer> {
  const server = http.createServer()
  const scripted = new ScriptedServerImpl(server)
  return new Promise((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port ?? 0, '127.0.0.1', () => {
      server.off('error', reject)
      resolve(scripted)
    })
  })
}

/** A scripted fault at the end of a stream (`hang`, `reset`, `close`); true when it ended the reply. */
function faultAtEnd(end: string, req: http.IncomingMessage, res: http.ServerResponse): boolean {
  if (end === 'hang') return true
  if (end === 'reset') {
    req.socket.destroy()
    return true
  }
  if (end === 'close') {
    res.end()
    return true
  }
  return false
}
