/**
 * A session's status read from the database: what `engine.status` says in memory, for a turn
 * any engine runs (a web server asking about a worker's turn).
 */
import type { Store } from '../store/store'
import type { SessionStatus } from '../core/types'
import { waitOf } from '../../machines/turn.machine'
import { approvalsIn, storedToolParts, waitStatus } from '../tools/awaited-calls'

/**
 * @example
 * await readStatus(store, sessionId) // { type: 'busy', turnId, state: 'awaiting-approval', approvals: [{ callId, tool, input }] }
 * // (a turn in a waiting state lists what it waits on: `approvals` to decide, or `calls` whose results it waits for)
 */
export async function readStatus(store: Pick<Store, 'turns' | 'transitions' | 'messages'>, sessionId: string): Promise<SessionStatus> {
  const open = await store.turns.openOfSession(sessionId)
  const turn = open && (await store.turns.get(open.id))
  if (!turn) return { type: 'idle' }
  if (turn.state === 'retry-waiting') {
    const last = (await store.transitions.list(turn.id)).at(-1)
    const error = last?.payload.error as { message?: string } | undefined
    return { type: 'retry', turnId: turn.id, attempt: turn.attempt, message: error?.message ?? 'retrying', next: turn.retryAt ?? turn.time.updated }
  }
  if (turn.state === 'tool-running') {
    // Run trees: a parent waiting on its tools shows the approvals its descendants wait for.
    const approvals = await descendantApprovals(store, turn.id)
    return { type: 'busy', turnId: turn.id, state: turn.state, ...(approvals.length ? { approvals } : {}) }
  }
  const wait = waitOf(turn.state)
  if (!wait) return { type: 'busy', turnId: turn.id, state: turn.state }
  return waitStatus(wait.awaits, turn.id, turn.state, await storedToolParts(store, sessionId, turn.id))
}

/** The calls the unfinished descendants of a turn wait for a decision on, each with its turn's id. */
async function descendantApprovals(store: Pick<Store, 'turns' | 'messages'>, turnId: string): Promise<Array<{ callId: string; tool: string; input: unknown; turnId: string }>> {
  const approvals: Array<{ callId: string; tool: string; input: unknown; turnId: string }> = []
  for (let level = [turnId]; level.length > 0; ) {
    const open = (await Promise.all(level.map((id) => store.turns.children(id)))).flat().filter((t) => t.outcome === null)
    for (const child of open) {
      if (waitOf(child.state)?.awaits === 'decision') approvals.push(...approvalsIn(await storedToolParts(store, child.sessionId, child.id)).map((call) => ({ ...call, turnId: child.id })))
    }
    level = open.filter((t) => t.state === 'tool-running').map((t) => t.id)
  }
  return approvals
}
