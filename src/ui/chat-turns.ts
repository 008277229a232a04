/**
 * Which turns a chat may act on. The handler approves, denies and streams only the chat's own
 * turns: a turn id from a request body is checked here first.
 */
import { InvalidArgumentError } from '../core/errors'
import type { Engine } from '../engine/engine'

/**
 * True when `turnId` is one of the chat's own turns: a turn of the chat's session. (When run
 * trees land, a descendant session's turns join here: one place to change.) An unknown or
 * malformed id is not the chat's, so a client cannot tell another chat's turn from no turn.
 *
 * @example
 * if (!(await isChatTurn(engine, chatId, turnId))) return forbidden()
 */
export async function isChatTurn(engine: Engine, chatId: string, turnId: string): Promise<boolean> {
  const turn = await engine.getTurn(turnId).catch((error: unknown) => {
    if (InvalidArgumentError.isInstance(error)) return undefined // not an id at all
    throw error
  })
  return turn !== undefined && turn.sessionId === chatId
}
