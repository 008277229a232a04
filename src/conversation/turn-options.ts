/**
 * A prompt's options applied to its turn: checked when `prompt` is called (bad names and
 * settings throw at once), merged with the session's defaults inside the transaction that
 * stores the prompt, stored with the turn, and installed as the turn's configuration. The same
 * transaction makes a pending revert final (the hidden messages are deleted).
 */
import type { ResolvedConfig } from '../config/resolved-config'
import type { Store } from '../store/store'
import type { TurnServices } from '../turn/turn-config'
import type { TurnRequest } from '../turn/turn-starts'
import type { PromptOptions, ScheduleOccurrence } from '../core/types'
import { resolveTurnOptions, turnConfig } from './resolve-turn-options'
import type { ConcurrencyLimits } from '../config/concurrency'
import { ConcurrencyLimitError } from '../core/errors'

/**
 * Checks `concurrency` in the transaction that starts the turn, after the lock that orders every
 * such start (two engines' starts count one after the other): throws `ConcurrencyLimitError`
 * when the tenant, or the database, already runs its limit.
 */
export async function takeSlot(tx: Store, limits: ConcurrencyLimits, sessionId: string, tenant: string | null, turnId: string): Promise<void> {
  const running = await tx.slots!.running(tenant, turnId)
  if (limits.total !== undefined && running.total >= limits.total) throw new ConcurrencyLimitError({ sessionId, limit: 'total', max: limits.total, tenant })
  if (limits.perTenant !== undefined && tenant !== null && running.tenant >= limits.perTenant) throw new ConcurrencyLimitError({ sessionId, limit: 'perTenant', max: limits.perTenant, tenant })
}

/**
 * The `TurnRequest` of a prompt (`schedule`: the occurrence that queued it). Throws
 * `InvalidArgumentError` for an unknown model or tool name or a bad setting.
 *
 * @example
 * startTurn(deps, sessionId, parts, turnRequest(config, services, sessionId, { model: 'fast', temperature: 0 }))
 */
export function turnRequest(config: ResolvedConfig, services: TurnServices, sessionId: string, options: PromptOptions | undefined, schedule?: ScheduleOccurrence): TurnRequest {
  const { maxSteps } = resolveTurnOptions(config, undefined, options) // validates now, synchronously
  return {
    ...(maxSteps !== undefined ? { maxSteps } : {}),
    async prepare(tx: Store, turnId: string) {
      const session = await tx.sessions.get(sessionId)
      // A run tree's child turn runs in its root's slot; a top-level turn takes one (or is refused: nothing stored).
      if (config.concurrency && session && !session.parentSessionId) await takeSlot(tx, config.concurrency, sessionId, session.tenant ?? null, turnId)
      if (session?.revertedTo) {
        await tx.messages.deleteAfter(sessionId, session.revertedTo)
        await tx.sessions.setRevertedTo(sessionId, null, Date.now())
      }
      const resolved = resolveTurnOptions(config, session?.defaults, options)
      // (a schedule's turn stores which occurrence started it)
      const stored = schedule ? { ...resolved.stored, schedule } : resolved.stored
      await tx.turns.setOptions(turnId, stored)
      return turnConfig(config, services, stored, resolved.memory)
    },
  }
}
