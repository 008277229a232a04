/**
 * `POST <api>/<id>/calls` with `{ turnId, callId, output }`, `{ …, error }` or `{ …, retry: true }`:
 * `engine.resolveCall` on a waiting call of the chat's own turn (a deferred call's result from a
 * webhook, a call in doubt settled by a person); 204; 403 `TurnNotInChatError` when the turn is
 * not the chat's; 409 `CallNotWaitingError` when the call does not wait; 400 for another body.
 */
import { CallNotWaitingError, InvalidArgumentError, RequestTooLargeError, TurnNotInChatError } from '../core/errors'
import type { CallResolution } from '../tools/resolve-call'
import type { ChatContext } from './chat-context'
import { chatIdPattern, chatIdRule } from './chat-request'
import { isChatTurn } from './chat-turns'
import { readBody } from './read-body'

export async function resolveChatCall(chat: ChatContext, request: Request, chatId: string): Promise<Response> {
  if (!chatIdPattern.test(chatId)) return chat.invalid(chatIdRule)
  if (!(await chat.authorized(request, chatId))) return chat.denied(chatId)
  const read = await readBody(request, chat.maxBodyBytes)
  if (!read.ok) return chat.error(413, new RequestTooLargeError(chat.maxBodyBytes))
  let body: unknown
  try {
    body = JSON.parse(read.text)
  } catch {
    return chat.invalid('expected JSON { turnId, callId, output | error | retry }')
  }
  const { turnId, callId, ...resolution } = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>
  if (typeof turnId !== 'string' || typeof callId !== 'string' || !turnId || !callId) return chat.invalid('expected { turnId, callId, output | error | retry }')
  // Only the chat's own turns: a turn id from the body may name another chat's.
  if (!(await isChatTurn(chat.engine, chatId, turnId))) return chat.error(403, new TurnNotInChatError(chatId, turnId))
  try {
    await chat.engine.resolveCall(turnId, callId, resolution as CallResolution)
  } catch (error) {
    if (CallNotWaitingError.isInstance(error)) return chat.error(409, error)
    if (InvalidArgumentError.isInstance(error)) return chat.error(400, error)
    throw error
  }
  return chat.noContent()
}
