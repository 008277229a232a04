/**
 * `approve`, `deny` and `abort` from any engine on the database. The engine that runs the turn
 * applies them at once; a turn whose engine is gone is taken over first; a turn another live
 * engine runs gets a stored request, which that engine applies within its poll interval (or, if
 * it dies first, the engine that recovers the turn does).
 */
import { ApprovalNotPendingError } from '../core/errors'
import { newId } from '../core/ids'
import type { Store } from '../store/store'
import type { ControlTarget } from './control-poller'

export interface RemoteControlDeps {
  store: Pick<Store, 'turns' | 'controls'>
  /** The turn if this engine runs it. */
  localTurn(turnId: string): ControlTarget | undefined
  /** Takes over the turns of engines that are gone (recovery). */
  recover(): Promise<unknown>
  /** How long to wait for the running engine to apply a request before returning anyway. */
  waitMs: number
  /** How often to look whether it did. */
  checkEveryMs: number
  /**
   * An edited approval of a call another engine runs, checked here before it is stored (the
   * tool's editability and schema, read from the stored call): resolves with the input as its
   * schema parses it.
   */
  checkEdit(turnId: string, callId: string, input: unknown): Promise<unknown>
}

/** What is decided of a waiting call: approved (maybe with an edited input) or denied (maybe with a reason). */
export type Decision = { kind: 'approve'; input?: unknown } | { kind: 'deny'; reason?: string }

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * Approves or denies a waiting tool call of `turnId`, wherever the turn runs. Resolves once the
 * running engine applied it (or after `waitMs`, the request stored); throws
 * `ApprovalNotPendingError` when the call is not waiting.
 *
 * @example
 * await requestDecision(deps, turnId, 'call_1', { kind: 'approve' })
 */
export async function requestDecision(deps: RemoteControlDeps, turnId: string, callId: string, decision: Decision): Promise<void> {
  const apply = async (turn: ControlTarget) => {
    if (decision.kind === 'deny') return turn.deny(callId, decision.reason)
    await turn.approve(callId, decision.input === undefined ? undefined : { input: decision.input })
  }
  let turn = deps.localTurn(turnId)
  if (!turn) {
    await deps.recover() // a turn left waiting by an engine that is gone
    turn = deps.localTurn(turnId)
  }
  if (turn) return apply(turn)
  const record = await deps.store.turns.get(turnId)
  if (!record) throw new ApprovalNotPendingError(turnId, callId, 'no such turn')
  if (record.outcome) throw new ApprovalNotPendingError(turnId, callId, `the turn ended (${record.outcome})`)
  if (record.state !== 'awaiting-approval') throw new ApprovalNotPendingError(turnId, callId, `the turn is in '${record.state}'`)
  const edited = decision.kind === 'approve' && decision.input !== undefined ? { input: await deps.checkEdit(turnId, callId, decision.input) } : {}
  const id = newId('ctl')
  await deps.store.controls.add({ id, turnId, kind: decision.kind, callId, reason: (decision.kind === 'deny' ? decision.reason : undefined) ?? null, createdAt: Date.now(), ...edited })
  const deadline = Date.now() + deps.waitMs
  while (Date.now() < deadline) {
    await sleep(deps.checkEveryMs)
    const outcome = await deps.store.controls.outcome(id)
    if (!outcome?.handled) continue
    if (outcome.result) throw new ApprovalNotPendingError(turnId, callId, outcome.result)
    return
  }
}

/**
 * Aborts the unfinished turn of `sessionId`, wherever it runs, and resolves when it has ended
 * (or after `waitMs`, the request stored). No turn: nothing happens.
 *
 * @example
 * await requestAbort(deps, sessionId, (s) => activeTurns.get(s))
 */
export async function requestAbort(deps: RemoteControlDeps, sessionId: string, reason = 'aborted from another engine'): Promise<void> {
  const open = await deps.store.turns.openOfSession(sessionId)
  if (!open) return
  await deps.recover()
  const taken = deps.localTurn(open.id)
  if (taken) return taken.abort(reason)
  await deps.store.controls.add({ id: newId('ctl'), turnId: open.id, kind: 'abort', callId: null, reason, createdAt: Date.now() })
  const deadline = Date.now() + deps.waitMs
  while (Date.now() < deadline) {
    await sleep(deps.checkEveryMs)
    if ((await deps.store.turns.get(open.id))?.outcome) return
  }
}
