/**
 * A session's status read from the database: what `engine.status` says in memory, for a turn
 * any engine runs (a web server asking about a worker's turn). The facts its state's status
 * shows are read back from the store; the status itself is `sessionStatus`'s, as in memory.
 */
import type { Store } from '../store/store'
import type { SessionStatus, TurnRecord } from '../core/types'
import { waitOf } from '../../machines/turn.machine'
import { approvalsIn } from '../chart/awaited-calls'
import { sessionStatus, statusFacts, type ApprovalBelow, type StatusFacts } from '../chart/session-status'
import { openTurnsBelow, storedToolParts } from './stored-turns'

type StatusStore = Pick<Store, 'turns' | 'transitions' | 'messages'>

/**
 * @example
 * await readStatus(store, sessionId) // { type: 'busy', turnId, state: 'awaiting-approval', approvals: [{ callId, tool, input }] }
 * // (a turn in a waiting state lists what it waits on: `approvals` to decide, or `calls` whose results it waits for)
 */
export async function readStatus(store: StatusStore, sessionId: string): Promise<SessionStatus> {
  const open = await store.turns.openOfSession(sessionId)
  const turn = open && (await store.turns.get(open.id))
  if (!turn) return { type: 'idle' }
  return sessionStatus(turn.id, turn.state, await storedFacts(store, turn))
}

/** The one fact the turn's status shows, read back. */
async function storedFacts(store: StatusStore, turn: TurnRecord): Promise<StatusFacts> {
  switch (statusFacts(turn.state)) {
    case 'retry': {
      const last = (await store.transitions.list(turn.id)).at(-1)
      const error = last?.payload.error as { message?: string } | undefined
      return { retry: { attempt: turn.attempt, message: error?.message ?? 'retrying', next: turn.retryAt ?? turn.time.updated } }
    }
    case 'toolParts':
      return { toolParts: await storedToolParts(store, turn.sessionId, turn.id) }
    case 'approvalsBelow':
      return { approvalsBelow: await approvalsBelow(store, turn.id) }
    default:
      return {}
  }
}

/** The calls the open descendants of a turn wait for a decision on, each with its turn's id. */
async function approvalsBelow(store: StatusStore, turnId: string): Promise<ApprovalBelow[]> {
  const deciding = (await openTurnsBelow(store, turnId)).filter((turn) => waitOf(turn.state)?.awaits === 'decision')
  const approvals = await Promise.all(deciding.map(async (turn) => approvalsIn(await storedToolParts(store, turn.sessionId, turn.id)).map((call) => ({ ...call, turnId: turn.id }))))
  return approvals.flat()
}
