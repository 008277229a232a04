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

/** Token counts reported in the final usage chunk of a streamed reply. */
export interface ScriptUsage {
  input: number
  output: number
  reasoning?: number
  cacheRead?: number
}

/** One piece of a streamed reply. */
export type ScriptChunk =
  /** Sent as `delta.content`. */
  | { text: string }
  /**
   * Sent as `delta.reasoning_content` (chat completions) or a `thinking_delta` (Anthropic);
   * `signature` ends the Anthropic thinking block with a `signature_delta`, or is the Gemini
   * part's `thoughtSignature` (on a tool chunk too).
   */
  | { reasoning: string; signature?: string }
  /**
   * One tool call. An object `input` is JSON-stringified; a string is sent raw, which
   * lets tests send invalid JSON. `id` defaults to `call_<n>`.
   */
  | { tool: { name: string; input: unknown | string; id?: string; signature?: string } }
  /**
   * An SSE data line sent verbatim as `data: ${raw}\n\n` (on the Anthropic path preceded by
   * `event: <type>` when `raw` is JSON with a `type`). A function builds it from the request
   * (e.g. a provider error that echoes the request headers).
   */
  | { raw: string | ((request: RecordedRequest) => string) }

/** A `200 text/event-stream` reply made of scripted chunks. */
export interface StreamReply {
  type: 'stream'
  chunks: ScriptChunk[]
  /**
   * `finish_reason` of the last choice chunk; default `'tool_calls'` if any tool chunk, else `'stop'`.
   * On the Anthropic path the `stop_reason`; default `'tool_use'` or `'end_turn'`.
   */
  finish?: string
  /** Default `{ input: 10, output: 5 }`; sent as a final chunk with `choices: []` (Anthropic: in `message_start` and `message_delta`). */
  usage?: ScriptUsage
  /**
   * What happens after the chunks:
   * - `'done'` (default): finish chunk, usage chunk, `data: [DONE]`, end.
   * - `'hang'`: nothing more, never ends (until `close()` or the client aborts).
   * - `'reset'`: the socket is destroyed abruptly, without finish or usage.
   * - `'close'`: the response ends cleanly but without finish chunk, usage or `[DONE]`.
   */
  end?: 'done' | 'hang' | 'reset' | 'close'
  /** Wait between chunks, in ms (default 0). */
  delayMs?: number
  /**
   * Holds the stream before chunk `chunk` (0-based: the chunks before it are sent) until `until`
   * settles, so a test opens it once what it waits for has happened (a page attached) instead
   * of pacing the stream and hoping. `close()` cuts the hold short.
   *
   * @example
   * let open!: () => void
   * server.push({ type: 'stream', chunks, holdBefore: { chunk: 10, until: new Promise<void>((r) => (open = r)) } })
   */
  holdBefore?: { chunk: number; until: PromiseLike<unknown> }
  headers?: Record<string, string>
}

/**
 * An HTTP error reply. A string `body` is sent as is, anything else JSON-stringified; a
 * function builds the body from the request (e.g. to echo its headers or URL, as some
 * providers and proxies do).
 */
export interface ErrorReply {
  type: 'error'
  status: number
  body: unknown | ((request: RecordedRequest) => unknown)
  headers?: Record<string, string>
}

/** Accept the request and never send a status line or body. */
export interface HangReply {
  type: 'hang'
}

/**
 * Any HTTP reply, sent as given: for providers that misbehave below the SSE protocol (a 200
 * with an HTML or JSON body, an event stream dribbled byte by byte). A string `body` is sent
 * at once; an array is sent piece by piece, `delayMs` apart. No header is added.
 */
export interface RawReply {
  type: 'raw'
  /** Default 200. */
  status?: number
  headers?: Record<string, string>
  body: string | string[]
  /** Wait between pieces of an array `body`, in ms (default 0). */
  delayMs?: number
  /** After the body: `'close'` (default) ends the response, `'hang'` keeps it open, `'reset'` destroys the socket. */
  end?: 'close' | 'hang' | 'reset'
}

export type ScriptReply = StreamReply | ErrorReply | HangReply | RawReply

/** The wire protocols the server speaks: OpenAI chat completions and Responses, Anthropic Messages, Gemini streamGenerateContent. */
export type ScriptProtocol = 'openai-chat' | 'openai-responses' | 'anthropic' | 'google'

/** The protocol of a request path (under the server's `url`, which ends in `/v1`). */
function protocolOf(path: string): ScriptProtocol | undefined {
  if (path === '/v1/chat/completions') return 'openai-chat'
  if (path === '/v1/responses') return 'openai-responses'
  if (path === '/v1/messages') return 'anthropic'
  if (/^\/v1\/models\/[^/]+:streamGenerateContent$/.test(path)) return 'google'
  return undefined
}

/** A call as the server received it. */
export interface RecordedRequest {
  /** Which protocol the call used, by its path. */
  protocol: ScriptProtocol
  /** The parsed JSON body (the raw string if it was not JSON). */
  body: any
  headers: Record<string, string | string[] | undefined>
  /** 1-based number of the call. */
  call: number
  /** The request target: path and query string (`/v1/chat/completions?key=…`). */
  url: string
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

const DEFAULT_USAGE: ScriptUsage = { input: 10, output: 5 }

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
      const request: RecordedRequest = { protocol, body, headers: { ...req.headers }, call: this.requests.length + 1, url: req.url ?? '' }
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
    if (protocol === 'anthropic') return this.streamAnthropic(reply, req, res, model, request)
    if (protocol === 'google') return this.streamGemini(reply, req, res, model, request)
    if (protocol === 'openai-responses') return this.streamResponses(reply, req, res, model, request)

    const created = Math.floor(Date.now() / 1000)
    let first = true
    const gone = () => res.destroyed || res.writableEnded || !this.open.has(res)
    const write = (data: string) => {
      if (!gone()) res.write(`data: ${data}\n\n`)
    }
    const send = (delta: Record<string, unknown>, finishReason: string | null = null) => {
      // The first chunk announces the role, as OpenAI does.
      if (first) delta = { role: 'assistant', ...delta }
      first = false
      write(JSON.stringify(this.chunk(model, created, [{ index: 0, delta, finish_reason: finishReason }])))
    }
    const pause = async () => {
      if (reply.delayMs) await this.sleep(reply.delayMs)
    }

    let toolIndex = 0
    for (const [i, chunk] of reply.chunks.entries()) {
      if (i > 0) await pause()
      if (reply.holdBefore?.chunk === i) await this.held(reply.holdBefore)
      if (gone()) return
      if ('text' in chunk) send({ content: chunk.text })
      else if ('reasoning' in chunk) send({ reasoning_content: chunk.reasoning })
      else if ('raw' in chunk) write(typeof chunk.raw === 'function' ? chunk.raw(request) : chunk.raw)
      else {
        const index = toolIndex++
        const { name, input, id } = chunk.tool
        const args = typeof input === 'string' ? input : JSON.stringify(input ?? {})
        const half = Math.ceil(args.length / 2)
        send({ tool_calls: [{ index, id, type: 'function', function: { name, arguments: '' } }] })
        await pause()
        send({ tool_calls: [{ index, function: { arguments: args.slice(0, half) } }] })
        await pause()
        send({ tool_calls: [{ index, function: { arguments: args.slice(half) } }] })
      }
    }
    if (reply.chunks.length > 0) await pause()
    if (gone()) return

    if (faultAtEnd(reply.end ?? 'done', req, res)) return
    const hasTool = reply.chunks.some((chunk) => 'tool' in chunk)
    send({}, reply.finish ?? (hasTool ? 'tool_calls' : 'stop'))
    const usage = reply.usage ?? DEFAULT_USAGE
    write(
      JSON.stringify({
        ...this.chunk(model, created, []),
        usage: {
          prompt_tokens: usage.input,
          completion_tokens: usage.output,
          total_tokens: usage.input + usage.output,
          prompt_tokens_details: { cached_tokens: usage.cacheRead ?? 0 },
          completion_tokens_details: { reasoning_tokens: usage.reasoning ?? 0 },
        },
      }),
    )
    write('[DONE]')
    res.end()
  }

  /** A stream reply in the Anthropic Messages protocol: one content block per run of text, thinking, or tool call. */
  private async streamAnthropic(reply: StreamReply, req: http.IncomingMessage, res: http.ServerResponse, model: string, request: RecordedRequest): Promise<void> {
    const gone = () => res.destroyed || res.writableEnded || !this.open.has(res)
    const event = (data: { type: string } & Record<string, unknown>) => {
      if (!gone()) res.write(`event: ${data.type}\ndata: ${JSON.stringify(data)}\n\n`)
    }
    const pause = async () => {
      if (reply.delayMs) await this.sleep(reply.delayMs)
    }
    const usage = reply.usage ?? DEFAULT_USAGE
    this.chunkCounter += 1
    event({
      type: 'message_start',
      message: {
        id: `msg_${this.chunkCounter}_${this.idTag}`,
        type: 'message',
        role: 'assistant',
        model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: usage.input, cache_creation_input_tokens: 0, cache_read_input_tokens: usage.cacheRead ?? 0, output_tokens: 1 },
      },
    })
    let index = -1
    let open: { kind: 'text' | 'thinking' | 'tool'; signed?: boolean } | undefined
    const stop = () => {
      if (open) event({ type: 'content_block_stop', index })
      open = undefined
    }
    const start = (kind: 'text' | 'thinking' | 'tool', block: Record<string, unknown>) => {
      stop()
      index += 1
      open = { kind }
      event({ type: 'content_block_start', index, content_block: block })
    }
    for (const [i, chunk] of reply.chunks.entries()) {
      if (i > 0) await pause()
      if (reply.holdBefore?.chunk === i) await this.held(reply.holdBefore)
      if (gone()) return
      if ('text' in chunk) {
        if (open?.kind !== 'text') start('text', { type: 'text', text: '' })
        event({ type: 'content_block_delta', index, delta: { type: 'text_delta', text: chunk.text } })
      } else if ('reasoning' in chunk) {
        if (open?.kind !== 'thinking' || open.signed) start('thinking', { type: 'thinking', thinking: '', signature: '' })
        event({ type: 'content_block_delta', index, delta: { type: 'thinking_delta', thinking: chunk.reasoning } })
        if (chunk.signature !== undefined) {
          event({ type: 'content_block_delta', index, delta: { type: 'signature_delta', signature: chunk.signature } })
          open!.signed = true
        }
      } else if ('raw' in chunk) {
        if (!gone()) res.write(typedRawEvent(typeof chunk.raw === 'function' ? chunk.raw(request) : chunk.raw))
      } else {
        const { name, input, id } = chunk.tool
        const args = typeof input === 'string' ? input : JSON.stringify(input ?? {})
        const half = Math.ceil(args.length / 2)
        start('tool', { type: 'tool_use', id, name, input: {} })
        await pause()
        event({ type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: args.slice(0, half) } })
        await pause()
        event({ type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: args.slice(half) } })
      }
    }
    if (reply.chunks.length > 0) await pause()
    if (gone()) return
    if (faultAtEnd(reply.end ?? 'done', req, res)) return
    stop()
    const hasTool = reply.chunks.some((chunk) => 'tool' in chunk)
    event({ type: 'message_delta', delta: { stop_reason: reply.finish ?? (hasTool ? 'tool_use' : 'end_turn'), stop_sequence: null }, usage: { output_tokens: usage.output } })
    event({ type: 'message_stop' })
    res.end()
  }

  /**
   * A stream reply in the OpenAI Responses protocol: one output item per run of reasoning
   * (a summary; `signature` is its `encrypted_content`), text (a message) or tool call (a
   * `function_call`), between `response.created` and `response.completed` (or
   * `response.incomplete` when `finish` is given, e.g. `'max_output_tokens'`).
   */
  private async streamResponses(reply: StreamReply, req: http.IncomingMessage, res: http.ServerResponse, model: string, request: RecordedRequest): Promise<void> {
    const gone = () => res.destroyed || res.writableEnded || !this.open.has(res)
    let sequence = 0
    const event = (data: { type: string } & Record<string, unknown>) => {
      if (!gone()) res.write(`event: ${data.type}\ndata: ${JSON.stringify({ ...data, sequence_number: sequence++ })}\n\n`)
    }
    const pause = async () => {
      if (reply.delayMs) await this.sleep(reply.delayMs)
    }
    this.chunkCounter += 1
    const tag = `${this.chunkCounter}${this.idTag}`
    const responseId = `resp_${tag}`
    const created_at = Math.floor(Date.now() / 1000)
    event({ type: 'response.created', response: { id: responseId, object: 'response', created_at, model, status: 'in_progress', output: [] } })
    let outputIndex = -1
    type Open = { kind: 'reasoning' | 'text'; id: string; text: string; encrypted?: string }
    let open: Open | undefined
    const item = (o: Open, status: string) =>
      o.kind === 'text'
        ? { type: 'message', id: o.id, role: 'assistant', status, content: status === 'completed' ? [{ type: 'output_text', text: o.text, annotations: [] }] : [] }
        : { type: 'reasoning', id: o.id, summary: status === 'completed' ? [{ type: 'summary_text', text: o.text }] : [], encrypted_content: o.encrypted ?? null }
    const close = () => {
      if (!open) return
      if (open.kind === 'reasoning') event({ type: 'response.reasoning_summary_part.done', item_id: open.id, output_index: outputIndex, summary_index: 0, part: { type: 'summary_text', text: open.text } })
      else event({ type: 'response.output_text.done', item_id: open.id, output_index: outputIndex, content_index: 0, text: open.text })
      event({ type: 'response.output_item.done', output_index: outputIndex, item: item(open, 'completed') })
      open = undefined
    }
    const start = (kind: 'reasoning' | 'text', encrypted?: string) => {
      close()
      outputIndex += 1
      open = { kind, id: `${kind === 'text' ? 'msg' : 'rs'}_${tag}_${outputIndex}`, text: '', encrypted }
      event({ type: 'response.output_item.added', output_index: outputIndex, item: item(open, 'in_progress') })
      if (kind === 'reasoning') event({ type: 'response.reasoning_summary_part.added', item_id: open.id, output_index: outputIndex, summary_index: 0, part: { type: 'summary_text', text: '' } })
    }
    for (const [i, chunk] of reply.chunks.entries()) {
      if (i > 0) await pause()
      if (reply.holdBefore?.chunk === i) await this.held(reply.holdBefore)
      if (gone()) return
      if ('text' in chunk) {
        if (open?.kind !== 'text') start('text')
        open!.text += chunk.text
        event({ type: 'response.output_text.delta', item_id: open!.id, output_index: outputIndex, content_index: 0, delta: chunk.text, logprobs: [] })
      } else if ('reasoning' in chunk) {
        if (open?.kind !== 'reasoning') start('reasoning', chunk.signature)
        if (chunk.signature !== undefined) open!.encrypted = chunk.signature
        open!.text += chunk.reasoning
        event({ type: 'response.reasoning_summary_text.delta', item_id: open!.id, output_index: outputIndex, summary_index: 0, delta: chunk.reasoning })
      } else if ('raw' in chunk) {
        if (!gone()) res.write(typedRawEvent(typeof chunk.raw === 'function' ? chunk.raw(request) : chunk.raw))
      } else {
        close()
        outputIndex += 1
        const { name, input, id } = chunk.tool
        const args = typeof input === 'string' ? input : JSON.stringify(input ?? {})
        const half = Math.ceil(args.length / 2)
        const call = { type: 'function_call', id: `fc_${tag}_${outputIndex}`, call_id: id, name, arguments: '', status: 'in_progress' }
        event({ type: 'response.output_item.added', output_index: outputIndex, item: call })
        await pause()
        event({ type: 'response.function_call_arguments.delta', item_id: call.id, output_index: outputIndex, delta: args.slice(0, half) })
        await pause()
        event({ type: 'response.function_call_arguments.delta', item_id: call.id, output_index: outputIndex, delta: args.slice(half) })
        event({ type: 'response.function_call_arguments.done', item_id: call.id, output_index: outputIndex, arguments: args })
        event({ type: 'response.output_item.done', output_index: outputIndex, item: { ...call, arguments: args, status: 'completed' } })
      }
    }
    if (reply.chunks.length > 0) await pause()
    if (gone()) return
    if (faultAtEnd(reply.end ?? 'done', req, res)) return
    close()
    const usage = reply.usage ?? DEFAULT_USAGE
    const incomplete = reply.finish !== undefined && reply.finish !== 'completed'
    event({
      type: incomplete ? 'response.incomplete' : 'response.completed',
      response: {
        id: responseId,
        object: 'response',
        created_at,
        model,
        status: incomplete ? 'incomplete' : 'completed',
        incomplete_details: incomplete ? { reason: reply.finish } : null,
        usage: {
          input_tokens: usage.input,
          input_tokens_details: { cached_tokens: usage.cacheRead ?? 0 },
          output_tokens: usage.output,
          output_tokens_details: { reasoning_tokens: usage.reasoning ?? 0 },
          total_tokens: usage.input + usage.output,
        },
      },
    })
    res.end()
  }

  /**
   * A stream reply in Gemini's `streamGenerateContent?alt=sse` protocol: one candidate chunk per
   * script chunk (thoughts are `thought: true` text parts, tool calls whole `functionCall` parts),
   * then a chunk with `finishReason` and `usageMetadata`.
   */
  private async streamGemini(reply: StreamReply, req: http.IncomingMessage, res: http.ServerResponse, model: string, request: RecordedRequest): Promise<void> {
    const gone = () => res.destroyed || res.writableEnded || !this.open.has(res)
    const write = (data: string) => {
      if (!gone()) res.write(`data: ${data}\r\n\r\n`)
    }
    this.chunkCounter += 1
    const responseId = `resp_${this.chunkCounter}_${this.idTag}`
    const candidate = (parts: unknown[], extra: Record<string, unknown> = {}) =>
      JSON.stringify({ candidates: [{ content: { parts, role: 'model' }, index: 0, ...extra }], modelVersion: model, responseId })
    const pause = async () => {
      if (reply.delayMs) await this.sleep(reply.delayMs)
    }
    for (const [i, chunk] of reply.chunks.entries()) {
      if (i > 0) await pause()
      if (reply.holdBefore?.chunk === i) await this.held(reply.holdBefore)
      if (gone()) return
      if ('text' in chunk) write(candidate([{ text: chunk.text }]))
      else if ('reasoning' in chunk) write(candidate([{ text: chunk.reasoning, thought: true, ...(chunk.signature ? { thoughtSignature: chunk.signature } : {}) }]))
      else if ('raw' in chunk) write(typeof chunk.raw === 'function' ? chunk.raw(request) : chunk.raw)
      else {
        const { name, input, id, signature } = chunk.tool
        let args: unknown = input ?? {}
        if (typeof input === 'string') {
          try {
            args = JSON.parse(input)
          } catch {
            args = input // Gemini sends parsed args; a string that is not JSON stays a string
          }
        }
        write(candidate([{ functionCall: { ...(id ? { id } : {}), name, args }, ...(signature ? { thoughtSignature: signature } : {}) }]))
      }
    }
    if (reply.chunks.length > 0) await pause()
    if (gone()) return
    if (faultAtEnd(reply.end ?? 'done', req, res)) return
    const usage = reply.usage ?? DEFAULT_USAGE
    write(
      JSON.stringify({
        candidates: [{ content: { parts: [{ text: '' }], role: 'model' }, finishReason: reply.finish ?? 'STOP', index: 0 }],
        usageMetadata: {
          promptTokenCount: usage.input,
          candidatesTokenCount: usage.output - (usage.reasoning ?? 0),
          totalTokenCount: usage.input + usage.output,
          ...(usage.reasoning ? { thoughtsTokenCount: usage.reasoning } : {}),
          ...(usage.cacheRead ? { cachedContentTokenCount: usage.cacheRead } : {}),
        },
        modelVersion: model,
        responseId,
      }),
    )
    res.end()
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

  private chunk(model: string, created: number, choices: unknown[]) {
    this.chunkCounter += 1
    return {
      id: `chatcmpl-${this.chunkCounter}-${this.idTag}`,
      object: 'chat.completion.chunk',
      created,
      model,
      choices,
    }
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

/** A raw SSE line, preceded by `event: <type>` when it is JSON with a `type` (Anthropic, Responses). */
function typedRawEvent(raw: string): string {
  let type: unknown
  try {
    type = (JSON.parse(raw) as { type?: unknown }).type
  } catch {
    type = undefined
  }
  return `${typeof type === 'string' ? `event: ${type}\n` : ''}data: ${raw}\n\n`
}
