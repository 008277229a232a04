/**
 * `createChatHandler`: a Web-standard `(request: Request) => Promise<Response>` that speaks what
 * the AI SDK's `useChat` (with `DefaultChatTransport`) sends, for an engine in this process. This
 * module routes; each route is a module of its own (chat-start-turn, chat-approvals, chat-calls,
 * chat-stream, chat-messages), sharing a `ChatContext` (chat-context.ts).
 *
 * What a hostile client can send is bounded here: a body over `maxBodyBytes` is refused while it
 * streams in; the app's `authorize` decides, before anything is read or done, who may use a
 * chat; an approval acts only on the chat's own turns; and the app's hooks (`authorize`,
 * `newSession`, `onError`) cannot throw past the handler.
 */
import type { Engine } from '../engine/engine'
import { InvalidOptionError, RequestTooLargeError } from '../core/errors'
import { callHook } from '../core/hooks'
import { answerChatApprovals } from './chat-approvals'
import { resolveChatCall } from './chat-calls'
import { ChatContext } from './chat-context'
import { chatMessages } from './chat-messages'
import type { ChatHandler, ChatHandlerOptions } from './chat-options'
import { chatIdPattern, chatIdRule, chatRoute, parseChatBody } from './chat-request'
import { startChatTurn } from './chat-start-turn'
import { abortChatTurn, chatStream } from './chat-stream'
import { readBody } from './read-body'

export { defaultMaxBodyBytes } from './chat-context'
export type { ChatAuthorization, ChatHandler, ChatHandlerOptions, NewChatSession } from './chat-options'

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
  const chat = new ChatContext(engine, options)
  const handler = async (request: Request): Promise<Response> => {
    try {
      // `return await`: a rejection of the route is caught below, not handed to the caller.
      return request.method === 'POST' ? await post(chat, request) : await getOrDelete(chat, request)
    } catch (error) {
      if (options.onError) callHook(() => options.onError!(error), () => undefined)
      return chat.json(500, { error: { name: 'InternalError', message: 'the chat handler failed; see the server log' } })
    }
  }
  // (nothing to stop: the handler holds no subscription of its own; kept for the interface)
  return Object.assign(handler, { close: () => undefined })
}

/** `POST <api>` (a user message, or approval responses) and `POST <api>/<id>/calls`. */
async function post(chat: ChatContext, request: Request): Promise<Response> {
  const route = chatRoute(new URL(request.url))
  if (route?.action === 'calls') return resolveChatCall(chat, request, route.chatId)
  const read = await readBody(request, chat.maxBodyBytes)
  if (!read.ok) return chat.error(413, new RequestTooLargeError(chat.maxBodyBytes))
  const body = parseChatBody(read.text)
  if (!body) return chat.invalid('expected { id, messages } as useChat sends')
  if (!chatIdPattern.test(body.id)) return chat.invalid(chatIdRule)
  const verdict = await chat.authorization(request, body.id)
  if (!verdict.ok) return chat.denied(body.id)
  const last = body.messages[body.messages.length - 1]
  return last.role === 'user' ? startChatTurn(chat, request, body, last) : answerChatApprovals(chat, request, body, last, verdict.by)
}

/** `GET <api>/<id>/stream`, `DELETE <api>/<id>/stream`, `GET <api>/<id>/messages`. */
async function getOrDelete(chat: ChatContext, request: Request): Promise<Response> {
  const url = new URL(request.url)
  const route = chatRoute(url)
  if (!route || (route.action !== 'stream' && route.action !== 'messages')) return chat.json(404, { error: { name: 'NotFound', message: url.pathname } })
  const allowed = route.action === 'stream' ? ['GET', 'DELETE'] : ['GET']
  if (!allowed.includes(request.method)) return chat.json(405, { error: { name: 'MethodNotAllowed', message: request.method } })
  if (!chatIdPattern.test(route.chatId)) return chat.invalid(chatIdRule)
  if (!(await chat.authorized(request, route.chatId))) return chat.denied(route.chatId)
  if (route.action === 'messages') return chatMessages(chat, route.chatId)
  return request.method === 'DELETE' ? abortChatTurn(chat, route.chatId) : chatStream(chat, request, route.chatId)
}

function checkOptions(options: ChatHandlerOptions): void {
  for (const name of ['authorize', 'newSession', 'onError'] as const) {
    if (options[name] !== undefined && typeof options[name] !== 'function') throw new InvalidOptionError(name, options[name], 'a function')
  }
  const max = options.maxBodyBytes
  if (max !== undefined && (!Number.isSafeInteger(max) || max < 1)) throw new InvalidOptionError('maxBodyBytes', max, 'a whole number of bytes >= 1')
  if (options.whenBusy !== undefined && options.whenBusy !== 'reject' && options.whenBusy !== 'steer') throw new InvalidOptionError('whenBusy', options.whenBusy, "'reject' or 'steer'")
}
