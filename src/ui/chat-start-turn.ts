/**
 * `POST <api>` with a user message last: a turn of the chat (its session created when new) with
 * the message's text and files, streamed; while a turn runs, 409 `SessionBusyError`, or with
 * `whenBusy: 'steer'` 202 `{ steered: { id, turnId } }` (the running turn takes the message).
 */
import type { UIMessage } from 'ai'
import { FileTooLargeError, InvalidArgumentError, SessionBusyError } from '../core/errors'
import type { ChatContext } from './chat-context'
import { promptInputOf, UnusableMessage } from './chat-input'
import type { ChatRequestBody } from './chat-request'
import { unfinishedTurnId } from './poll-turn'

export async function startChatTurn(chat: ChatContext, request: Request, body: ChatRequestBody, last: UIMessage): Promise<Response> {
  const { engine } = chat
  let input
  try {
    input = promptInputOf(last, engine.config.maxFileBytes)
  } catch (error) {
    if (FileTooLargeError.isInstance(error)) return chat.error(413, error)
    if (error instanceof UnusableMessage) return chat.invalid(error.message)
    throw error
  }
  const running = engine.activeTurn(body.id)?.id ?? (await unfinishedTurnId(engine, body.id)) // here, or in another process
  if (running && chat.steerWhenBusy) {
    const steered = await engine.steer(body.id, input)
    return chat.json(202, { steered: { id: steered.id, turnId: running } })
  }
  if (running) return chat.error(409, new SessionBusyError(body.id, running))
  if (!(await ensureChatSession(chat, request, body.id))) return chat.denied(body.id)
  try {
    const turn = engine.prompt(body.id, input)
    return chat.stream(request, turn, { replay: false, messages: body.messages })
  } catch (error) {
    if (SessionBusyError.isInstance(error)) return chat.error(409, error)
    if (FileTooLargeError.isInstance(error)) return chat.error(413, error)
    if (InvalidArgumentError.isInstance(error)) return chat.error(400, error)
    throw error
  }
}

/**
 * The chat's session, created when new (with the app's `newSession` options). False when another
 * request created it at the same moment and `authorize` does not let this one into it: it allowed
 * a chat that did not exist, and the one that exists now may not be this user's.
 */
async function ensureChatSession(chat: ChatContext, request: Request, chatId: string): Promise<boolean> {
  const { engine } = chat
  if (await engine.getSession(chatId)) return true
  const created = await engine.createSession({ ...(await chat.newSessionOptions(request, chatId)), id: chatId }).then(
    () => true,
    async (error: unknown) => {
      if (!(await engine.getSession(chatId))) throw error
      return false // another request created this chat at the same moment
    },
  )
  return created || (await chat.authorized(request, chatId))
}
