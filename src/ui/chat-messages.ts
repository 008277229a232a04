/** `GET <api>/<id>/messages`: the stored conversation as `UIMessage[]` (JSON; an unknown chat has none). */
import { SessionNotFoundError } from '../core/errors'
import { toUIMessages } from '../ui-stream/ui-messages'
import type { ChatContext } from './chat-context'

export async function chatMessages(chat: ChatContext, chatId: string): Promise<Response> {
  const stored = await chat.engine.messages(chatId).catch((error) => {
    if (SessionNotFoundError.isInstance(error)) return []
    throw error
  })
  return chat.json(200, toUIMessages(stored))
}
