/**
 * Approval deadlines (`approvalTimeoutMs`): a call waiting for approval past its stored
 * `expiresAt` is expired (denied, its receipt `expired`; the model sees the denial). The deadline
 * is stored twice: on the waiting part (which call) and as the turn row's `retry_at` (the
 * earliest one: which turn). No timer holds it: the recovery sweep of whichever engine sweeps
 * reads the rows, so a parked turn (held by no engine) expires too: the sweeping engine takes
 * it. A turn another live engine holds is left to that engine's own sweep.
 */
import { parkableStates } from '../../machines/parkable-states'
import { parkedOwner } from '../core/parking'
import type { Store } from '../store/store'
import type { ParkedTurns } from './parked-turns'
import type { RunningTurns } from './running-turns'

/**
 * Expires the approvals that are due, in this engine's turns and in parked ones.
 *
 * @example
 * await expireApprovals({ store, running, parked }) // after each recovery sweep
 */
export async function expireApprovals(deps: { store: Pick<Store, 'turns'>; running: RunningTurns; parked: Pick<ParkedTurns, 'settle'> }, now = Date.now()): Promise<void> {
  for (const record of await deps.store.turns.open()) {
    if (!parkableStates.has(record.state) || record.retryAt === null || record.retryAt > now) continue
    const here = deps.running.find(record.id)
    if (here) await here.expireApprovals(now)
    // A parked turn past its deadline (an approval's, or a waiting call's: src/engine/call-deadlines.ts settles held ones) is taken here.
    else if (record.owner === parkedOwner) await deps.parked.settle(record.id, async (turn) => void (await Promise.all([turn.expireApprovals(now), turn.expireCalls(now)])))
  }
}
