/**
 * The committer of a turn's progress: it writes what the row planner (row-plan.ts) planned, in
 * the caller's transaction (a final row's turn update carries the turn's usage). Every write of
 * `turns.update` and `transitions.append` in turnchart is here (test/architecture/
 * forbidden-patterns.test.ts checks it), called by the turn log (turn-log.ts) for a running
 * turn and by recovery for a turn it claimed. Inserts, claims, leases and pruning stay with
 * their owners.
 */
import type { StorageWaited } from '../../core/types'
import type { Store, TurnFence } from '../../store/store'
import type { RowPlan } from './row-plan'

/** What writing a row needs of a transaction: the log and the turn row (and a run tree's spending, which rides with it). */
export type LogTx = Pick<Store, 'transitions' | 'turns' | 'spending'>

/**
 * Writes a plan: the turn row moved to the plan's state (fenced: a turn another engine took
 * over, and logged further, fails here as lost, not on the seq it already wrote), then the log
 * rows appended in order, in the caller's transaction. The one function that writes a
 * transition row.
 *
 * @example
 * await store.transaction((tx) => writePlan(tx, fence, planRows(facts, transitions)))
 */
export async function writePlan(tx: LogTx, fence: TurnFence, plan: RowPlan): Promise<void> {
  await tx.turns.update(plan.turnId, plan.turn, plan.time, fence)
  for (const row of plan.rows) await tx.transitions.append(row)
}

/** The plan with `waits` (the outages waited out before it was written) on its last row. */
export function withStorageWaits(plan: RowPlan, waits: StorageWaited[]): RowPlan {
  if (waits.length === 0) return plan
  const rows = [...plan.rows]
  rows[rows.length - 1] = { ...rows[rows.length - 1]!, storageWaits: waits }
  return { ...plan, rows }
}
