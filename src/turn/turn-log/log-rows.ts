/**
 * The writes of a turn's progress: its log rows, its row's state, its usage. Every write of
 * `turns.update`, `turns.setUsage` and `transitions.append` in turnchart is one of these
 * functions (test/architecture/forbidden-patterns.test.ts checks it), called by the turn log
 * (turn-log.ts) for a running turn and by recovery for a turn it claimed. Inserts, claims,
 * leases and pruning stay with their owners.
 */
import { retryWaitStates, waitOf } from '../../../machines/turn.machine'
import type { SerializedError } from '../../core/errors'
import type { TransitionRecord, TurnOutcome, TurnUsage } from '../../core/types'
import type { Store, TurnFence } from '../../store/store'

/** What writing a row needs of a transaction: the log and the turn row (and a run tree's spending, which rides with it). */
export type LogTx = Pick<Store, 'transitions' | 'turns' | 'spending'>

/** The turn row's fields a log row sets (the chart's context at that row). */
export interface RowState {
  step: number
  attempt: number
  /** When a retry wait's deadline is (a retry wait's row only): recovery resumes the wait there. */
  retryAt: number | null
  /** The final row's error (completed: none). */
  error: SerializedError | null
}

const finalStates = new Set(['completed', 'failed', 'aborted'])

/**
 * Writes transitions: the turn row moved to the last row's state (fenced: a turn another
 * engine took over, and logged further, fails here as lost, not on the seq it already wrote),
 * then the log rows appended in order (the rows of effect-free states ride with the row that
 * leaves them), in the caller's transaction. The one function that writes a transition row.
 *
 * @example
 * await store.transaction((tx) => writeLogRows(tx, fence, [row], { step: 1, attempt: 1, retryAt: null, error: null }))
 */
export async function writeLogRows(tx: LogTx, fence: TurnFence, rows: readonly TransitionRecord[], state: RowState): Promise<void> {
  const last = rows.at(-1)
  if (!last) return
  const final = finalStates.has(last.to)
  const outcome = final ? (last.to as TurnOutcome) : null
  await tx.turns.update(last.turnId, { state: last.to, outcome, step: state.step, attempt: state.attempt, retryAt: state.retryAt, error: final ? state.error : null }, last.time, fence)
  for (const row of rows) await tx.transitions.append(row)
}

/** A write that rides in a log row's transaction, after its rows (a run tree's spending). */
export interface RowRider {
  write(tx: LogTx): Promise<void>
}

/**
 * The write of a transition's rows and of what rides with them, as the part writer's `commit`
 * runs it in its transaction (after the dirty parts). Made here, not in the turn log, so that a
 * row's write is one call from the transaction to the statements.
 *
 * @example
 * await scope.writer.commit(logRowsWrite(fence, rows, state, rider), { fencedByMore: true })
 */
export function logRowsWrite(fence: TurnFence, rows: readonly TransitionRecord[], state: RowState, rider?: RowRider): (tx: LogTx) => Promise<void> {
  return async (tx) => {
    await writeLogRows(tx, fence, rows, state)
    await rider?.write(tx)
  }
}

/**
 * The deadline a row to `to` carries (the turn row's `retry_at`): in a retry wait its time plus
 * the chart's delay; in a waiting state (`waitOf`) `waitDeadline`, the earliest deadline of what
 * it waits on, which whichever engine sweeps settles (src/engine/deadline-sweep.ts); else none.
 */
export function retryAtOf(to: string, time: number, context: { retryDelayMs: number }, waitDeadline: number | null): number | null {
  if (retryWaitStates.has(to)) return time + context.retryDelayMs
  if (waitOf(to)) return waitDeadline
  return null
}

/**
 * Ends a turn whose log cannot be replayed (a gap, a hand-edited row): its row only becomes
 * `failed`. No log row is added: a row after a gap would claim a path the chart never took,
 * and the log stays as it was found, for whoever reads why.
 */
export async function failUnreplayable(tx: LogTx, turn: { id: string; step: number; attempt: number }, fence: TurnFence, error: SerializedError, now: number): Promise<void> {
  await tx.turns.update(turn.id, { state: 'failed', outcome: 'failed', step: turn.step, attempt: turn.attempt, retryAt: null, error }, now, fence)
}

/** Writes a finished turn's usage on its row (reverting its messages later does not lose it). */
export function writeUsage(store: Pick<Store, 'turns'>, turnId: string, usage: TurnUsage): Promise<void> {
  return store.turns.setUsage(turnId, usage)
}
