/** Refusals of the chat handler (`createChatHandler`): who may use a chat, which turns it may touch, how much it may send. */
import { isNamed, TurnchartError } from './turnchart-error'

/** The handler's `authorize` answered no for this chat: 403, and nothing was read, created or started. */
export class ChatAccessDeniedError extends TurnchartError {
  readonly name = 'ChatAccessDeniedError'
  readonly chatId: string
  constructor(chatId: string) {
    super(`not authorized for chat ${JSON.stringify(chatId)}`)
    this.chatId = chatId
  }
  static isInstance = isNamed<ChatAccessDeniedError>('ChatAccessDeniedError')
}

/**
 * An approval or a denial named a turn that is not one of the chat's own (a turn of another
 * session, or no turn at all): 403, and nothing was decided.
 */
export class TurnNotInChatError extends TurnchartError {
  readonly name = 'TurnNotInChatError'
  readonly chatId: string
  readonly turnId: string
  constructor(chatId: string, turnId: string) {
    super(`turn ${JSON.stringify(turnId)} is not a turn of chat ${JSON.stringify(chatId)}`)
    this.chatId = chatId
    this.turnId = turnId
  }
  static isInstance = isNamed<TurnNotInChatError>('TurnNotInChatError')
}

/** A request body larger than the handler's `maxBodyBytes`: 413, and the rest of it is not read. */
export class RequestTooLargeError extends TurnchartError {
  readonly name = 'RequestTooLargeError'
  readonly limit: number
  constructor(limit: number) {
    super(`the request body is larger than maxBodyBytes (${limit} bytes)`)
    this.limit = limit
  }
  static isInstance = isNamed<RequestTooLargeError>('RequestTooLargeError')
}
