/**
 * Which turns a chat may act on. The handler approves, denies and streams only the chat's own
 * turns: a turn id from a request body is checked here first.
 */
import { InvalidArgumentError } from '../core/errors'
import type { Engine } from '../engine/engine'

/**
 * True when `turnId` is one of the chat's own turns: a turn of the chat's session, or a
 * descendant of one (run trees: a child turn an `agentTool` call started, its children, …). An
 * unknown or malformed id is not the chat's, so a client cannot tell another chat's turn from no turn.
 *
 * @example
 * if (!(await isChatTurn(engine, chatId, turnId))) return forbidden()
 */
export async function isChatTurn(engine: Engine, chatId: string, turnId: string): Promise<boolean> {
  const turn = await engine.getTurn(turnId).catch((error: unknown) => {
    if (InvalidArgumentError.isInstance(error)) return undefined // not an id at all
    throw error
  })
  // Up the tree to the turn a session of its own holds (trees are shallow: a few reads at most).
  for (let at = turn, depth = 0; at !== undefined && depth < 64; depth++) {
    if (at.sessionId === chatId) return true
    if (!at.parentTurnId) return false
    at = await engine.getTurn(at.parentTurnId)
  }
  return false
}

/**
 * The turn each call waits on, for the approvals a chat answers: the chat's turn itself, or,
 * run trees, the descendant turn whose call it is (as `readStatus` lists them).
 *
 * @example
 * const owner = await approvalOwners(engine, chatId) // Map { 'call_deploy' => 'trn_child' }
 */
export async function approvalOwners(engine: Engine, chatId: string): Promise<Map<string, string>> {
  const status = await engine.readStatus(chatId)
  const owners = new Map<string, string>()
  if (status.type === 'busy') for (const call of status.approvals ?? []) if (call.turnId) owners.set(call.callId, call.turnId)
  return owners
}
