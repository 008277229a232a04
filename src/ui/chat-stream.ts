/**
 * `GET <api>/<id>/stream`: the chat's running turn, what it produced so far and then live (204
 * when nothing runs); a turn another engine runs is read from its rows. `DELETE
 * <api>/<id>/stream`: aborts the running turn; 204.
 */
import { createUIMessageStreamResponse } from 'ai'
import type { ChatContext } from './chat-context'
import { pollTurnStream, unfinishedTurnId } from './poll-turn'

export async function chatStream(chat: ChatContext, request: Request, chatId: string): Promise<Response> {
  const { engine } = chat
  const running = engine.activeTurn(chatId)
  if (running) return chat.stream(request, running, { replay: true })
  // Not in this process's mirror: a turn run by another engine (or started before the handler).
  const turnId = await unfinishedTurnId(engine, chatId)
  if (!turnId) return chat.noContent()
  // PostgreSQL notifications, when the engine listens: each flush of the running engine is read at once.
  const changes = engine.notifications ? { changes: engine.notifications } : {}
  const polled = pollTurnStream(engine, { id: turnId, sessionId: chatId }, { intervalMs: chat.options.pollIntervalMs, signal: request.signal, ...changes })
  return createUIMessageStreamResponse({ stream: polled, headers: chat.headers })
}

export async function abortChatTurn(chat: ChatContext, chatId: string): Promise<Response> {
  await chat.engine.abort(chatId)
  return chat.noContent()
}
