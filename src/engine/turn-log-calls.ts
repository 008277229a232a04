/**
 * The engine's calls on stored turns: a turn's row, its transition log and its replay, a
 * session's persisted status, and pruning old logs. Store work only; `createEngine` composes them.
 */
import type { TurnInput } from '../../machines/turn.types'
import type { SessionStatus, TransitionRecord, TurnRecord } from '../core/types'
import type { ReplayStep } from '../turn/replay'
import { readStatus } from '../control/read-status'
import type { EngineCall } from './engine-calls'
import { InvalidArgumentError, TurnNotFoundError } from '../core/errors'
import { requireId } from '../core/arguments'
import type { Store } from '../store/store'
import { replayTransitions } from '../turn/replay'
import { approvalReceipts, type SessionApprovalReceipt } from '../conversation/approval-receipts'

export interface TurnLogCalls {
  /**
   * What the session is doing, read from the database: answers for a turn any engine runs,
   * with the calls waiting for a decision in `awaiting-approval`.
   */
  readStatus(sessionId: string): Promise<SessionStatus>
  /** The persisted transition log of a turn, in order. Throws `TurnNotFoundError` for an unknown turn. */
  transitions(turnId: string): Promise<TransitionRecord[]>
  /** The persisted record of a turn, or undefined when the database does not hold it (a lookup). */
  getTurn(turnId: string): Promise<TurnRecord | undefined>
  /**
   * Run trees: the direct child turns of a turn (started by its `agentTool` calls), oldest first,
   * each with `parentTurnId` and `parentCallId`. Empty for a turn that started none or an unknown turn.
   */
  childTurns(turnId: string): Promise<TurnRecord[]>
  /**
   * The turn's state sequence rebuilt from its transition log with the chart's pure
   * `transition()`. Throws `ReplayMismatchError` at a row the chart would not have taken,
   * `TurnNotFoundError` for an unknown turn.
   */
  replay(turnId: string): Promise<ReplayStep[]>
  /**
   * The session's approval receipts, oldest first: each decision on a call that asked for
   * approval (`approved`, `denied`, `expired`), who made it (`by`), when (`at`), and the hex
   * SHA-256 of the canonical JSON of the input decided on (`inputDigest`). Kept on the tool part
   * and in the turn's log, so they survive a fork (the copy's parts carry them) and a revert
   * (the log stays); `prune` of an old turn's log leaves the parts' copy.
   */
  approvalReceipts(sessionId: string): Promise<SessionApprovalReceipt[]>
  /** Deletes the transition logs of turns that ended before `olderThan` (a Date or ms); messages and parts stay. Returns the rows deleted. */
  prune(options: { olderThan: Date | number }): Promise<number>
}

/**
 * @example
 * const engine = { ...turnLogCalls({ store, requireOpen, call }), ... }
 */
export function turnLogCalls({ store, requireOpen, call }: { store: Store; requireOpen(operation: string): void; call: EngineCall }): TurnLogCalls {
  return {
    readStatus: (sessionId) => call('read a session status', () => readStatus(store, requireId('sessionId', sessionId))),
    transitions: (turnId) =>
      call('read transitions', async () => {
        requireId('turnId', turnId)
        if (!(await store.turns.get(turnId))) throw new TurnNotFoundError(turnId)
        return store.transitions.list(turnId)
      }),
    approvalReceipts: (sessionId) => call('read approval receipts', () => approvalReceipts(store, requireId('sessionId', sessionId))),
    getTurn: (turnId) => call('get a turn', async () => store.turns.get(requireId('turnId', turnId))),
    childTurns: (turnId) => call('list child turns', async () => store.turns.children(requireId('turnId', turnId))),
    replay: (turnId) =>
      call('replay a turn', async () => {
        requireId('turnId', turnId)
        const input = (await store.turns.input(turnId)) as TurnInput | undefined
        if (!input) throw new TurnNotFoundError(turnId)
        return replayTransitions(input, await store.transitions.list(turnId)).steps
      }),
    async prune(options) {
      requireOpen('prune transition logs')
      if (typeof options !== 'object' || options === null) throw new InvalidArgumentError('options', options, 'an object like { olderThan }')
      const { olderThan } = options
      const before = olderThan instanceof Date ? olderThan.getTime() : olderThan
      if (typeof before !== 'number' || !Number.isFinite(before)) throw new InvalidArgumentError('olderThan', olderThan, 'a Date or a time in ms')
      return call('prune transition logs', () => store.transitions.deleteFinished(before))
    },
  }
}
