/**
 * `createChatHandler`: a Web-standard `(request: Request) => Promise<Response>` that speaks what
 * the AI SDK's `useChat` (with `DefaultChatTransport`) sends, for an engine in this process.
 *
 * What a hostile client can send is bounded here: a body over `maxBodyBytes` is refused while it
 * streams in; the app's `authorize` decides, before anything is read or done, who may use a
 * chat; an approval acts only on the chat's own turns; and the app's hooks (`authorize`,
 * `newSession`, `onError`) cannot throw past the handler.
 */
import { createUIMessageStreamResponse, isToolUIPart, type UIMessage } from 'ai'
import type { Engine } from '../engine/engine'
import {
  ApprovalNotPendingError,
  CallNotWaitingError,
  ChatAccessDeniedError,
  FileTooLargeError,
  HookError,
  InvalidArgumentError,
  InvalidOptionError,
  RequestTooLargeError,
  SessionBusyError,
  SessionNotFoundError,
  TurnNotInChatError,
  serializeError,
} from '../core/errors'
import { callHook } from '../core/hooks'
import type { TurnchartEvent } from '../core/bus'
import type { SessionMetadata } from '../core/types'
import type { TurnChunks } from '../ui-stream/turn-chunks'
import { promptInputOf, UnusableMessage } from './chat-input'
import { approvalOwners, isChatTurn } from './chat-turns'
import { followHandedOffTurn, pollTurnStream, unfinishedTurnId } from './poll-turn'
import { readBody } from './read-body'
import type { CallResolution } from '../tools/resolve-call'
import { toUIMessageStreamResponse, type TurnRef } from '../ui-stream/to-ui-message-stream'
import { toUIMessages } from '../ui-stream/ui-messages'

/**
 * The default `maxBodyBytes`: 32 MiB. `useChat` sends a file as a base64 `data:` URL (4/3 of its
 * size) inside the JSON body, with the whole conversation: this fits two attachments at the
 * engine's default `maxFileBytes` (10 MB, 13.4 MB each as base64) plus the text, and refuses
 * anything that could not be one chat message.
 */
export const defaultMaxBodyBytes = 32 * 1024 * 1024

/** The options of a session the handler creates for a new chat (from `newSession`). */
export interface NewChatSession {
  title?: string
  /** The app's data about the chat, e.g. `{ owner: user.id }` for `authorize` to read later. */
  metadata?: SessionMetadata
}

/** What `authorize` answers: `true`, or the identity of who is let through (`{ by }`, a non-empty string); anything else refuses. */
export type ChatAuthorization = boolean | { by: string }

export interface ChatHandlerOptions {
  /**
   * Who may use a chat: called before every route with the request and the chat id (on a POST,
   * after the body is read, since the id is in it); `true` lets the request through, anything
   * else answers **403** `ChatAccessDeniedError` and nothing happens (no session created, no turn
   * started, no message read). May be async. A throw answers 500 (the error goes to `onError`).
   * Without it every chat is open to anyone who knows its id.
   *
   * In place of `true` it may return an identity, `{ by }` (`by`: a non-empty string, a user id or
   * an email): the request is let through, and the approvals and denials it carries are stored
   * with that identity as their `by` (the call's receipt, `engine.approvalReceipts`). (A bare
   * string is not an identity: `'no'` must not let anyone in.)
   */
  authorize?: (request: Request, chatId: string) => ChatAuthorization | Promise<ChatAuthorization>
  /**
   * The title and metadata of the session the handler creates for a new chat (its first POST),
   * e.g. `{ metadata: { owner: user.id } }`. May be async. A throw answers 500, nothing created.
   */
  newSession?: (request: Request, chatId: string) => NewChatSession | undefined | Promise<NewChatSession | undefined>
  /**
   * The largest request body read, in bytes (default `defaultMaxBodyBytes`, 32 MiB): counted
   * while the body streams in; past it the answer is **413** `RequestTooLargeError` and the rest
   * is not read.
   */
  maxBodyBytes?: number
  /**
   * What a client that drops a stream means. `'abort'` (default): the turn is aborted (that is
   * how `useChat`'s `stop()` reaches the server). `'detach'`: the stream ends and the turn goes
   * on, so a page that reloads can resume it (`useChat({ resume: true })`); the page then stops
   * a turn with `DELETE <api>/<chatId>/stream`. A server cannot tell a reload from a stop, which
   * is why resuming pages need `'detach'`.
   */
  onDisconnect?: 'abort' | 'detach'
  /**
   * A user message POSTed while the chat's turn runs (here or on another engine): `'reject'`
   * (default) answers **409** `SessionBusyError`; `'steer'` hands it to the running turn
   * (`engine.steer`): stored at once, the model sees it at the turn's next step boundary, and the
   * turn's stream shows it (a `data-steered` part) and goes on. The POST answers **202**
   * `{ steered: { id, turnId } }`. Should the turn end first, the message starts the chat's
   * next turn (`GET <api>/<id>/stream` streams it).
   */
  whenBusy?: 'reject' | 'steer'
  /** Headers added to every response (e.g. CORS). */
  headers?: Record<string, string>
  /**
   * How often a resumed stream of a turn run by another process reads its rows (ms, default 250);
   * with PostgreSQL notifications it also reads them at each write of that process.
   */
  pollIntervalMs?: number
  /**
   * Called with an unexpected error (a `HookError` when `authorize` or `newSession` threw); the
   * client gets a 500 without its details. Its own throw (or rejection) is ignored.
   */
  onError?: (error: unknown) => void
}

/** A request handler, plus `close()` (it holds nothing now: each stream reads its turn, and ends with it or its client). */
export interface ChatHandler {
  (request: Request): Promise<Response>
  close(): void
}

interface ChatRequestBody {
  id: string
  messages: UIMessage[]
  /** Edited inputs of approved calls, by tool call id (only tools the engine's `editableApprovals` names). */
  approvalInputs?: Record<string, unknown>
}

function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } })
}

function errorResponse(status: number, error: unknown, headers?: Record<string, string>): Response {
  return json(status, { error: serializeError(error) }, headers)
}

/** A chat id as `createSession` takes it; anything else is refused before any hook sees it. */
const chatIdPattern = /^[\w.:-]{1,200}$/

function parseBody(text: string): ChatRequestBody | undefined {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return undefined
  }
  if (typeof value !== 'object' || value === null) return undefined
  const { id, messages, approvalInputs } = value as Record<string, unknown>
  if (typeof id !== 'string' || !Array.isArray(messages) || messages.length === 0) return undefined
  const last = messages[messages.length - 1] as Partial<UIMessage> | null
  if (typeof last !== 'object' || last === null || !Array.isArray(last.parts) || (last.role !== 'user' && last.role !== 'assistant')) return undefined
  if (approvalInputs !== undefined && (typeof approvalInputs !== 'object' || approvalInputs === null || Array.isArray(approvalInputs))) return undefined
  return { id, messages: messages as UIMessage[], ...(approvalInputs ? { approvalInputs: approvalInputs as Record<string, unknown> } : {}) }
}

/** `<api>/<chatId>/<action>` of a GET or DELETE; the chat id is the last-but-one segment. */
function chatRoute(url: URL): { chatId: string; action: string } | undefined {
  const segments = url.pathname.split('/').filter(Boolean)
  if (segments.length < 2) return undefined
  try {
    return { chatId: decodeURIComponent(segments[segments.length - 2]), action: segments[segments.length - 1] }
  } catch {
    return undefined // a malformed %-escape
  }
}

function checkOptions(options: ChatHandlerOptions): void {
  for (const name of ['authorize', 'newSession', 'onError'] as const) {
    if (options[name] !== undefined && typeof options[name] !== 'function') throw new InvalidOptionError(name, options[name], 'a function')
  }
  const max = options.maxBodyBytes
  if (max !== undefined && (!Number.isSafeInteger(max) || max < 1)) throw new InvalidOptionError('maxBodyBytes', max, 'a whole number of bytes >= 1')
  if (options.whenBusy !== undefined && options.whenBusy !== 'reject' && options.whenBusy !== 'steer') throw new InvalidOptionError('whenBusy', options.whenBusy, "'reject' or 'steer'")
}

/**
 * Creates the handler. Routes (the path prefix is yours; the convention is `/api/chat`):
 *
 * | request | answer |
 * |---|---|
 * | `POST <api>` with a user message last | starts a turn in session `id` (created when new) with the message's text and files, and streams it; while a turn runs: 409 `SessionBusyError`, or with `whenBusy: 'steer'` 202 `{ steered: { id, turnId } }` (the running turn takes the message) |
 * | `POST <api>` with an assistant message last whose tools carry approval responses | `engine.approve`/`deny` each, `by` the identity `authorize` returned (an approval with `approvalInputs[toolCallId]` in the body runs the tool with that input), then streams the rest of the turn; 403 `TurnNotInChatError` when the turn is not the chat's; 409 `ApprovalNotPendingError` when none was pending; 400 for an edit the engine refuses |
 * | `POST <api>/<id>/calls` with `{ turnId, callId, output }`, `{ …, error }` or `{ …, retry: true }` | `engine.resolveCall`: hands in a deferred call's result, or settles a call in doubt, of the chat's own turn (a webhook or a person); 204; 403 `TurnNotInChatError` when the turn is not the chat's; 409 `CallNotWaitingError` when the call does not wait; 400 for another body |
 * | `GET <api>/<id>/stream` | the running turn: what it produced so far, then live; 204 when nothing runs |
 * | `DELETE <api>/<id>/stream` | aborts the running turn; 204 |
 * | `GET <api>/<id>/messages` | the stored conversation as `UIMessage[]` (JSON) |
 *
 * Errors are JSON `{ error: { name, message, ... } }`: 400 for a malformed body or chat id, 403
 * when `authorize` says no or a turn is not the chat's, 404 for an unknown route, 405 for a
 * method it does not take, 409 for a busy chat or no pending approval, 413 for a body over
 * `maxBodyBytes` or a file over the engine's `maxFileBytes`, 500 (details to `onError` only)
 * otherwise.
 *
 * @example
 * // app/api/chat/[[...path]]/route.ts (Next.js)
 * const handler = createChatHandler(engine, { authorize: async (request, chatId) => ownsChat(await userOf(request), chatId) })
 * export const POST = handler, GET = handler, DELETE = handler
 */
export function createChatHandler(engine: Engine, options: ChatHandlerOptions = {}): ChatHandler {
  checkOptions(options)
  const headers = options.headers ?? {}
  const abortOnDisconnect = (options.onDisconnect ?? 'abort') === 'abort'
  const steerWhenBusy = options.whenBusy === 'steer'
  const maxBodyBytes = options.maxBodyBytes ?? defaultMaxBodyBytes
  const invalid = (message: string) => json(400, { error: { name: 'InvalidRequest', message } }, headers)
  const denied = (chatId: string) => errorResponse(403, new ChatAccessDeniedError(chatId), headers)

  /** The app's verdict on this request for this chat: `true` or an identity lets it through (`by`: that identity). */
  const authorization = async (request: Request, chatId: string): Promise<{ ok: boolean; by?: string }> => {
    if (!options.authorize) return { ok: true }
    let answer: unknown
    try {
      answer = await options.authorize(request, chatId)
    } catch (error) {
      throw new HookError('authorize', error)
    }
    if (answer === true) return { ok: true }
    const by = (answer as { by?: unknown } | null)?.by
    if (typeof answer === 'object' && typeof by === 'string' && by !== '') return { ok: true, by }
    return { ok: false }
  }
  const authorized = async (request: Request, chatId: string): Promise<boolean> => (await authorization(request, chatId)).ok

  /** The options of the session a new chat gets, from the app's `newSession`. */
  const newSessionOptions = async (request: Request, chatId: string): Promise<NewChatSession> => {
    if (!options.newSession) return {}
    try {
      const answer = await options.newSession(request, chatId)
      return { ...(answer?.title !== undefined ? { title: answer.title } : {}), ...(answer?.metadata !== undefined ? { metadata: answer.metadata } : {}) }
    } catch (error) {
      throw new HookError('newSession', error)
    }
  }

  /**
   * Streams `turn`; a dropped client aborts it when so configured (only while it streams). A
   * turn this engine runs is read from itself (its replay: the turn so far); any other from the
   * engine's bus.
   */
  const stream = (request: Request, turn: TurnRef, from: { replay: boolean; messages?: UIMessage[] }, signal?: AbortSignal): Response => {
    let streaming = true
    const running = engine.activeTurn(turn.sessionId)
    const here = running?.id === turn.id ? running : undefined
    const onClientGone = () => {
      if (!streaming || !abortOnDisconnect) return
      let active
      try {
        active = engine.activeTurn(turn.sessionId)
      } catch {
        return // closed: a stream that follows a handed-off turn outlives the engine; nothing runs here to abort
      }
      if (active?.id === turn.id) active.abort('the client stopped the stream')
    }
    request.signal.addEventListener('abort', onClientGone, { once: true })
    const streamSignal = anySignal(request.signal, signal)
    return toUIMessageStreamResponse(here ?? engine, here ?? turn, {
      replay: from.replay && here !== undefined,
      originalMessages: from.messages,
      signal: streamSignal,
      headers,
      // This engine handed the turn off (a deploy): the response goes on through the new owner's rows.
      ...(here ? { afterHandoff: (chunks: TurnChunks, sent: TurnchartEvent[]) => followHandedOffTurn(engine, here, chunks, sent, { intervalMs: options.pollIntervalMs, signal: streamSignal }) } : {}),
      onEnd: () => {
        streaming = false
        request.signal.removeEventListener('abort', onClientGone)
      },
    })
  }

  const startTurn = async (request: Request, body: ChatRequestBody, last: UIMessage): Promise<Response> => {
    let input
    try {
      input = promptInputOf(last, engine.config.maxFileBytes)
    } catch (error) {
      if (FileTooLargeError.isInstance(error)) return errorResponse(413, error, headers)
      if (error instanceof UnusableMessage) return invalid(error.message)
      throw error
    }
    const running = engine.activeTurn(body.id)?.id ?? (await unfinishedTurnId(engine, body.id)) // here, or in another process
    if (running && steerWhenBusy) {
      const steered = await engine.steer(body.id, input)
      return json(202, { steered: { id: steered.id, turnId: running } }, headers)
    }
    if (running) return errorResponse(409, new SessionBusyError(body.id, running), headers)
    if (!(await engine.getSession(body.id))) {
      const created = await engine.createSession({ ...(await newSessionOptions(request, body.id)), id: body.id }).then(
        () => true,
        async (error: unknown) => {
          if (!(await engine.getSession(body.id))) throw error
          return false // another request created this chat at the same moment
        },
      )
      // `authorize` allowed a chat that did not exist; the one that exists now may not be this user's.
      if (!created && !(await authorized(request, body.id))) return denied(body.id)
    }
    try {
      const turn = engine.prompt(body.id, input)
      return stream(request, turn, { replay: false, messages: body.messages })
    } catch (error) {
      if (SessionBusyError.isInstance(error)) return errorResponse(409, error, headers)
      if (FileTooLargeError.isInstance(error)) return errorResponse(413, error, headers)
      if (InvalidArgumentError.isInstance(error)) return errorResponse(400, error, headers)
      throw error
    }
  }

  const answerApprovals = async (request: Request, body: ChatRequestBody, last: UIMessage, by: string | undefined): Promise<Response> => {
    const responses = last.parts.filter(isToolUIPart).filter((p) => p.state === 'approval-responded')
    if (responses.length === 0) return invalid('the last message is neither a user message nor approval responses')
    const turnId = (last.metadata as { turnId?: unknown } | undefined)?.turnId
    const id = typeof turnId === 'string' && turnId !== '' ? turnId : engine.activeTurn(body.id)?.id
    if (!id) return errorResponse(409, new ApprovalNotPendingError('', responses[0].toolCallId, 'no turn runs in this chat'), headers)
    // Only the chat's own turns: a turn id from the body may name another chat's.
    if (!(await isChatTurn(engine, body.id, id))) return errorResponse(403, new TurnNotInChatError(body.id, id), headers)
    const cancel = new AbortController()
    // The stream subscribes before the decisions, so nothing the turn does after them is missed.
    const response = stream(request, { id, sessionId: body.id }, { replay: false, messages: body.messages }, cancel.signal)
    let accepted = 0
    let refusal: unknown
    // Run trees: a call a child turn of the chat's waits on is answered on that turn.
    const owners = await approvalOwners(engine, body.id)
    for (const part of responses) {
      const approval = (part as { approval?: { approved?: boolean; reason?: string } }).approval
      try {
        const edited = body.approvalInputs && Object.hasOwn(body.approvalInputs, part.toolCallId) ? { input: body.approvalInputs[part.toolCallId] } : undefined
        const target = owners.get(part.toolCallId) ?? id
        const who = by !== undefined ? { by } : {}
        if (approval?.approved === true) await engine.approve(target, part.toolCallId, { ...edited, ...who })
        else await engine.deny(target, part.toolCallId, { ...(typeof approval?.reason === 'string' ? { reason: approval.reason } : {}), ...who })
        accepted++
      } catch (error) {
        if (!ApprovalNotPendingError.isInstance(error) && !InvalidArgumentError.isInstance(error)) throw error
        refusal = error
      }
    }
    if (accepted > 0) return response
    cancel.abort()
    await response.body?.cancel().catch(() => undefined)
    return errorResponse(ApprovalNotPendingError.isInstance(refusal) ? 409 : 400, refusal, headers)
  }

  /** `POST <api>/<id>/calls`: a waiting call of the chat's own turn settled (`engine.resolveCall`). */
  const resolveCallRoute = async (request: Request, chatId: string): Promise<Response> => {
    if (!chatIdPattern.test(chatId)) return invalid('the chat id must be 1-200 letters, digits, _ . : -')
    if (!(await authorized(request, chatId))) return denied(chatId)
    const read = await readBody(request, maxBodyBytes)
    if (!read.ok) return errorResponse(413, new RequestTooLargeError(maxBodyBytes), headers)
    let body: unknown
    try {
      body = JSON.parse(read.text)
    } catch {
      return invalid('expected JSON { turnId, callId, output | error | retry }')
    }
    const { turnId, callId, ...resolution } = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>
    if (typeof turnId !== 'string' || typeof callId !== 'string' || !turnId || !callId) return invalid('expected { turnId, callId, output | error | retry }')
    // Only the chat's own turns: a turn id from the body may name another chat's.
    if (!(await isChatTurn(engine, chatId, turnId))) return errorResponse(403, new TurnNotInChatError(chatId, turnId), headers)
    try {
      await engine.resolveCall(turnId, callId, resolution as CallResolution)
    } catch (error) {
      if (CallNotWaitingError.isInstance(error)) return errorResponse(409, error, headers)
      if (InvalidArgumentError.isInstance(error)) return errorResponse(400, error, headers)
      throw error
    }
    return new Response(null, { status: 204, headers })
  }

  const post = async (request: Request): Promise<Response> => {
    const route = chatRoute(new URL(request.url))
    if (route?.action === 'calls') return resolveCallRoute(request, route.chatId)
    const read = await readBody(request, maxBodyBytes)
    if (!read.ok) return errorResponse(413, new RequestTooLargeError(maxBodyBytes), headers)
    const body = parseBody(read.text)
    if (!body) return invalid('expected { id, messages } as useChat sends')
    if (!chatIdPattern.test(body.id)) return invalid('the chat id must be 1-200 letters, digits, _ . : -')
    const verdict = await authorization(request, body.id)
    if (!verdict.ok) return denied(body.id)
    const last = body.messages[body.messages.length - 1]
    return last.role === 'user' ? startTurn(request, body, last) : answerApprovals(request, body, last, verdict.by)
  }

  const get = async (request: Request, url: URL): Promise<Response> => {
    const route = chatRoute(url)
    if (!route || (route.action !== 'stream' && route.action !== 'messages')) return json(404, { error: { name: 'NotFound', message: url.pathname } }, headers)
    const allowed = route.action === 'stream' ? ['GET', 'DELETE'] : ['GET']
    if (!allowed.includes(request.method)) return json(405, { error: { name: 'MethodNotAllowed', message: request.method } }, headers)
    if (!chatIdPattern.test(route.chatId)) return invalid('the chat id must be 1-200 letters, digits, _ . : -')
    if (!(await authorized(request, route.chatId))) return denied(route.chatId)
    if (route.action === 'messages') {
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
    const running = engine.activeTurn(route.chatId)
    if (running) return stream(request, running, { replay: true })
    // Not in this process's mirror: a turn run by another engine (or started before the handler).
    const turnId = await unfinishedTurnId(engine, route.chatId)
    if (!turnId) return new Response(null, { status: 204, headers })
    // PostgreSQL notifications, when the engine listens: each flush of the running engine is read at once.
    const polled = pollTurnStream(engine, { id: turnId, sessionId: route.chatId }, { intervalMs: options.pollIntervalMs, signal: request.signal, ...(engine.notifications ? { changes: engine.notifications } : {}) })
    return createUIMessageStreamResponse({ stream: polled, headers })
  }

  const handler = async (request: Request): Promise<Response> => {
    try {
      const url = new URL(request.url)
      // `return await`: a rejection of the route is caught below, not handed to the caller.
      return request.method === 'POST' ? await post(request) : await get(request, url)
    } catch (error) {
      if (options.onError) callHook(() => options.onError!(error), () => undefined)
      return json(500, { error: { name: 'InternalError', message: 'the chat handler failed; see the server log' } }, headers)
    }
  }
  // (nothing to stop: the handler holds no subscription of its own; kept for the interface)
  return Object.assign(handler, { close: () => undefined })
}

function anySignal(...signals: Array<AbortSignal | undefined>): AbortSignal {
  const present = signals.filter((s): s is AbortSignal => s !== undefined)
  return present.length === 1 ? present[0] : AbortSignal.any(present)
}
