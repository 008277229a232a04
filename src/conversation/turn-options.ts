/**
 * A prompt's options applied to its turn: checked when `prompt` is called (bad names and
 * settings throw at once), merged with the session's defaults inside the transaction that
 * stores the prompt, stored with the turn, and installed as the turn's configuration. The same
 * transaction makes a pending revert final (the hidden messages are deleted).
 */
import type { ResolvedConfig } from '../config/resolve-config'
import { deleteMessagesAfter, setRevertedTo, setTurnOptions } from '../store/conversation-store'
import type { Repository } from '../store/repository'
import type { TurnRequest } from '../turn/run-turn'
import type { TurnScope } from '../turn/turn-scope'
import { resolveTurnOptions, turnConfig, type PromptOptions } from './call-settings'

/**
 * The `TurnRequest` of a prompt. Throws `InvalidArgumentError` for an unknown model or tool
 * name or a bad setting.
 *
 * @example
 * startTurn(deps, sessionId, parts, turnRequest(config, sessionId, { model: 'fast', temperature: 0 }))
 */
export function turnRequest(config: ResolvedConfig, sessionId: string, options: PromptOptions | undefined): TurnRequest {
  const { maxSteps } = resolveTurnOptions(config, undefined, options) // validates now, synchronously
  return {
    ...(maxSteps !== undefined ? { maxSteps } : {}),
    async prepare(tx: Repository, scope: TurnScope) {
      const session = await tx.getSession(sessionId)
      if (session?.revertedTo) {
        await deleteMessagesAfter(tx, sessionId, session.revertedTo)
        await setRevertedTo(tx, sessionId, null, Date.now())
      }
      const resolved = resolveTurnOptions(config, session?.defaults, options)
      scope.useConfig(turnConfig(config, resolved.stored, resolved.headers))
      await setTurnOptions(tx, scope.turnId, resolved.stored)
    },
  }
}
