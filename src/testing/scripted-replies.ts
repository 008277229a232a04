/**
 * What a scripted server is told to answer (its replies, each chunk of a streamed one) and what
 * it records of each call: the script's vocabulary, shared by the server and its protocols.
 */

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
  /** When it arrived (epoch ms). */
  at: number
}

/** The usage a reply reports when its script gives none. */
export const DEFAULT_USAGE: ScriptUsage = { input: 10, output: 5 }
