/**
 * `createChatHandler`: a Web-standard `(request: Request) => Promise<Response>` that speaks what
 * the AI SDK's `useChat` (with `DefaultChatTransport`) sends, for an engine in this process.
 */
import { createUIMessageStreamResponse, isToolUIPart, type UIMessage } from 'ai'
import type { Engine } from '../engine/engine'
import { ApprovalNotPendingError, SessionBusyError, SessionNotFoundError, serializeError } from '../core/errors'
import { LiveTurns } from './live-turns'
import { pollTurnStream, unfinishedTurnId } from './poll-turn'
import { toUIMessageStreamResponse, type TurnRef } from './to-ui-message-stream'
import { toUIMessages } from './ui-messages'

export interface ChatHandlerOptions {
  /**
   * What a client that drops a stream means. `'abort'` (default): the turn is aborted (that is
   * how `useChat`'s `stop()` reaches the server). `'detach'`: the stream ends and the turn goes
   * on, so a page that reloads can resume it (`useChat({ resume: true })`); the page then stops
   * a turn with `DELETE <api>/<chatId>/stream`. A server cannot tell a reload from a stop, which
   * is why resuming pages need `'detach'`.
   */
  onDisconnect?: 'abort' | 'detach'
  /** Headers added to every response (e.g. CORS). */
  headers?: Record<string, string>
  /** How often a resumed stream of a turn run by another process reads its rows (ms, default 250). */
  pollIntervalMs?: number
  /** Called with an unexpected error; the client gets a 500 without its details. */
  onError?: (error: unknown) => void
}

/** A request handler, plus `close()` that stops its subscription to the engine. */
export interface ChatHandler {
  (request: Request): Promise<Response>
  close(): void
}

interface ChatRequestBody {
  id: string
  messages: UIMessage[]
}

function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } })
}

function errorResponse(status: number, error: unknown, headers?: Record<string, string>): Response {
  return json(status, { error: serializeError(error) }, headers)
}

function parseBody(value: unknown): ChatRequestBody | undefined {
  if (typeof value !== 'object' || value === null) return undefined
  const { id, messages } = value as Record<string, unknown>
  if (typeof id !== 'string' || id.length === 0 || !Array.isArray(messages) || messages.length === 0) return undefined
  return { id, messages: messages as UIMessage[] }
}

/** `<api>/<chatId>/<action>` of a GET or DELETE; the chat id is the last-but-one segment. */
function chatRoute(url: URL): { chatId: string; action: string } | undefined {
  const segments = url.pathname.split('/').filter(Boolean)
  if (segments.length < 2) return undefined
  return { chatId: decodeURIComponent(segments[segments.length - 2]), action: segments[segments.length - 1] }
}

/**
 * Creates the handler. Routes (the path prefix is yours; the convention is `/api/chat`):
 *
 * | request | answer |
 * |---|---|
 * | `POST <api>` with a user message last | starts a turn in session `id` (created when new) and streams it; 409 `SessionBusyError` while a turn runs |
 * | `POST <api>` with an assistant message last whose tools carry approval responses | `engine.approve`/`deny` each, then streams the rest of the turn; 409 `ApprovalNotPendingError` when none was pending |
 * | `GET <api>/<id>/stream` | the running turn: what it produced so far, then live; 204 when nothing runs |
 * | `DELETE <api>/<id>/stream` | aborts the running turn; 204 |
 * | `GET <api>/<id>/messages` | the stored conversation as `UIMessage[]` (JSON) |
 *
 * Errors are JSON `{ error: { name, message, ... } }`: 400 for a malformed body, 404 for an
 * unknown route, 405 for a method it does not take, 500 (details to `onError` only) otherwise.
 *
 * @example
 * // app/api/chat/[[...path]]/route.ts (Next.js)
 * const handler = createChatHandler(engine)
 * export const POST = handler, GET = handler, DELETE = handler
 */
export function createChatHandler(engine: Engine, options: ChatHandlerOptions = {}): ChatHandler {
  const live = new LiveTurns(engine)
  const headers = options.headers ?? {}
  const abortOnDisconnect = (options.onDisconnect ?? 'abort') === 'abort'

  /** Streams `turn`; a dropped client aborts it when so configured (only while it streams). */
  const stream = (request: Request, turn: TurnRef, from: { replay: boolean; messages?: UIMessage[] }, signal?: AbortSignal): Response => {
    let streaming = true
    const snapshot = live.snapshot(turn.sessionId)
    const onClientGone = () => {
      if (streaming && abortOnDisconnect && engine.activeTurn(turn.sessionId)?.id === turn.id) engine.activeTurn(turn.sessionId)?.abort('the client stopped the stream')
    }
    request.signal.addEventListener('abort', onClientGone, { once: true })
    return toUIMessageStreamResponse(engine, turn, {
      from: snapshot?.turnId === turn.id ? snapshot : undefined,
      replay: from.replay,
      originalMessages: from.messages,
      signal: anySignal(request.signal, signal),
      headers,
      onEnd: () => {
        streaming = false
        request.signal.removeEventListener('abort', onClientGone)
      },
    })
  }

  const startTurn = async (request: Request, body: ChatRequestBody, last: UIMessage): Promise<Response> => {
    const text = last.parts
      .filter((p): p is { type: 'text'; text: string } => p.type === 'text')
      .map((p) => p.text)
      .join('\n')
    if (text.trim().length === 0) return json(400, { error: { name: 'InvalidRequest', message: 'the last user message has no text' } }, headers)
    const running = engine.activeTurn(body.id)?.id ?? (await unfinishedTurnId(engine, body.id)) // here, or in another process
    if (running) return errorResponse(409, new SessionBusyError(body.id, running), headers)
    if (!(await engine.getSession(body.id))) {
      await engine.createSession({ id: body.id }).catch(async (error) => {
        if (!(await engine.getSession(body.id))) throw error // not a concurrent create of the same chat
      })
    }
    try {
      const turn = engine.prompt(body.id, text)
      return stream(request, turn, { replay: false, messages: body.messages })
    } catch (error) {
      if (SessionBusyError.isInstance(error)) return errorResponse(409, error, headers)
      throw error
    }
  }

  const answerApprovals = async (request: Request, body: ChatRequestBody, last: UIMessage): Promise<Response> => {
    const responses = last.parts.filter(isToolUIPart).filter((p) => p.state === 'approval-responded')
    if (responses.length === 0) return json(400, { error: { name: 'InvalidRequest', message: 'the last message is neither a user message nor approval responses' } }, headers)
    const turnId = (last.metadata as { turnId?: unknown } | undefined)?.turnId
    const id = typeof turnId === 'string' ? turnId : engine.activeTurn(body.id)?.id
    if (!id) return errorResponse(409, new ApprovalNotPendingError('', responses[0].toolCallId, 'no turn runs in this chat'), headers)
    const cancel = new AbortController()
    // The stream subscribes before the decisions, so nothing the turn does after them is missed.
    const response = stream(request, { id, sessionId: body.id }, { replay: false, messages: body.messages }, cancel.signal)
    let accepted = 0
    let refusal: unknown
    for (const part of responses) {
      const approval = (part as { approval?: { approved?: boolean; reason?: string } }).approval
      try {
        if (approval?.approved) await engine.approve(id, part.toolCallId)
        else await engine.deny(id, part.toolCallId, approval?.reason)
        accepted++
      } catch (error) {
        if (!ApprovalNotPendingError.isInstance(error)) throw error
        refusal = error
      }
    }
    if (accepted > 0) return response
    cancel.abort()
    await response.body?.cancel().catch(() => undefined)
    return errorResponse(409, refusal, headers)
  }

  const handler = async (request: Request): Promise<Response> => {
    try {
      const url = new URL(request.url)
      if (request.method === 'POST') {
        const body = parseBody(await request.json().catch(() => undefined))
        if (!body) return json(400, { error: { name: 'InvalidRequest', message: 'expected { id, messages } as useChat sends' } }, headers)
        const last = body.messages[body.messages.length - 1]
        return last.role === 'user' ? startTurn(request, body, last) : answerApprovals(request, body, last)
      }
      const route = chatRoute(url)
      if (!route || (route.action !== 'stream' && route.action !== 'messages')) return json(404, { error: { name: 'NotFound', message: url.pathname } }, headers)
      if (route.action === 'messages') {
        if (request.method !== 'GET') return json(405, { error: { name: 'MethodNotAllowed', message: request.method } }, headers)
        const stored = await engine.messages(route.chatId).catch((error) => {
          if (SessionNotFoundError.isInstance(error)) return []
          throw error
        })
        return json(200, toUIMessages(stored), headers)
      }
      if (request.method === 'DELETE') {
        await engine.abort(route.chatId)
        return new Response(null, { status: 204, headers })
      }
      if (request.method !== 'GET') return json(405, { error: { name: 'MethodNotAllowed', message: request.method } }, headers)
      const snapshot = live.snapshot(route.chatId)
      if (snapshot) return stream(request, { id: snapshot.turnId, sessionId: route.chatId }, { replay: true })
      // Not in this process's mirror: a turn run by another engine (or started before the handler).
      const turnId = await unfinishedTurnId(engine, route.chatId)
      if (!turnId) return new Response(null, { status: 204, headers })
      const polled = pollTurnStream(engine, { id: turnId, sessionId: route.chatId }, { intervalMs: options.pollIntervalMs, signal: request.signal })
      return createUIMessageStreamResponse({ stream: polled, headers })
    } catch (error) {
      options.onError?.(error)
      return json(500, { error: { name: 'InternalError', message: 'the chat handler failed; see the server log' } }, headers)
    }
  }
  return Object.assign(handler, { close: () => live.close() })
}

function anySignal(...signals: Array<AbortSignal | undefined>): AbortSignal {
  const present = signals.filter((s): s is AbortSignal => s !== undefined)
  return present.length === 1 ? present[0] : AbortSignal.any(present)
}
