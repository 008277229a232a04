/**
 * A session's status read from the database: what `engine.status` says in memory, for a turn
 * any engine runs (a web server asking about a worker's turn).
 */
import type { Repository } from '../store/repository'
import type { SessionStatus } from '../core/types'

/**
 * @example
 * await readStatus(repo, sessionId) // { type: 'busy', turnId, state: 'awaiting-approval', approvals: [{ callId, tool, input }] }
 */
export async function readStatus(repo: Repository, sessionId: string): Promise<SessionStatus> {
  const open = await repo.openTurnOfSession(sessionId)
  const turn = open && (await repo.getTurn(open.id))
  if (!turn) return { type: 'idle' }
  if (turn.state === 'retry-waiting') {
    const last = (await repo.transitions(turn.id)).at(-1)
    const error = last?.payload.error as { message?: string } | undefined
    return { type: 'retry', turnId: turn.id, attempt: turn.attempt, message: error?.message ?? 'retrying', next: turn.retryAt ?? turn.time.updated }
  }
  if (turn.state !== 'awaiting-approval') return { type: 'busy', turnId: turn.id, state: turn.state }
  const approvals = (await repo.messages(sessionId, { fromLatestSummary: true }))
    .filter((m) => m.info.turnId === turn.id)
    .flatMap((m) => m.parts)
    .flatMap((p) => (p.type === 'tool' && p.state.status === 'pending' && p.state.approval === 'required' ? [{ callId: p.callId, tool: p.tool, input: p.state.input }] : []))
  return { type: 'busy', turnId: turn.id, state: turn.state, approvals }
}
