/**
 * A session's status read from the database: what `engine.status` says in memory, for a turn
 * any engine runs (a web server asking about a worker's turn).
 */
import type { Store } from '../store/store'
import type { SessionStatus } from '../core/types'

/**
 * @example
 * await readStatus(store, sessionId) // { type: 'busy', turnId, state: 'awaiting-approval', approvals: [{ callId, tool, input }] }
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
  if (turn.state !== 'awaiting-approval') return { type: 'busy', turnId: turn.id, state: turn.state }
  const approvals = (await store.messages.list(sessionId, { fromLatestSummary: true }))
    .filter((m) => m.info.turnId === turn.id)
    .flatMap((m) => m.parts)
    .flatMap((p) => (p.type === 'tool' && p.state.status === 'pending' && p.state.approval === 'required' ? [{ callId: p.callId, tool: p.tool, input: p.state.input }] : []))
  return { type: 'busy', turnId: turn.id, state: turn.state, approvals }
}
