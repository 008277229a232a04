/**
 * `approve`, `deny` and `abort` from any engine on the database. The engine that runs the turn
 * applies them at once; a turn whose engine is gone is taken over first; a turn another live
 * engine runs gets a stored request, which that engine applies within its poll interval, or at
 * once when PostgreSQL notifies it (or, if it dies first, the engine that recovers the turn
 * does). A parked turn (no engine holds it) is taken by the engine the call is made on, and
 * decided there. The caller learns the outcome the same two ways: by reading it every `checkEveryMs`,
 * or at once when a notification says the request was handled (the turn ended, for an abort).
 */
import { Doorbell } from '../core/doorbell'
import { waitOf } from '../../machines/turn.machine'
import type { TurnEvent } from '../../machines/turn.types'
import { ApprovalNotPendingError, CallNotWaitingError } from '../core/errors'
import type { CallResolution } from '../tools/resolve-call'
import { newId } from '../core/ids'
import { parkedOwner } from '../core/parking'
import type { Store } from '../store/store'
import type { ToolPart } from '../core/types'
import { storedToolParts } from './stored-turns'
import { isWaitingCall } from '../tools/tool-part'
import type { ControlTarget } from './control-poller'
import { callWait } from '../core/call-wait'

/** What the store pushes about a stored request's outcome (PostgreSQL notifications), when the engine listens. */
export interface ControlOutcomeFeed {
  /**
   * Calls `listener` when a request was handled (`handled`: its id), when a session's turn ended
   * (`session`: its id; among other changes of its rows), or with nothing when news may have been
   * missed (the listening connection was down). Returns the unsubscribe.
   */
  subscribe(listener: (change?: { handled: string } | { session: string }) => void): () => void
}

export interface RemoteControlDeps {
  store: Pick<Store, 'turns' | 'controls' | 'messages'>
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
  /** Ends a wait for the outcome at once when it is pushed (else the next check finds it). */
  outcomes?: ControlOutcomeFeed
  /**
   * Parked turns (no engine holds them): takes the turn into this engine and applies `apply` to
   * it there; resolves false when the turn is not parked.
   */
  settleParked?(turnId: string, apply: (turn: ControlTarget) => Promise<void> | void): Promise<boolean>
  /** The parking of a turn of this engine, while it is in flight: a decision waits for it (then finds the turn parked), not applied to a handle that is letting go. */
  parkingOf?(turnId: string): Promise<void> | undefined
}

/**
 * What is decided of a waiting call: approved (maybe with an edited input) or denied (maybe with
 * a reason), or, for a call in doubt or deferred, resolved (`engine.resolveCall`).
 */
export type Decision = { kind: 'approve'; input?: unknown; by?: string } | { kind: 'deny'; reason?: string; by?: string } | { kind: 'resolve'; resolution: CallResolution }

/** The chart's event each decision is sent as: a turn waits for it when its state's `settledBy` names it. */
const settlingEvent: Record<Decision['kind'], TurnEvent['type']> = { approve: 'tool.approved', deny: 'tool.denied', resolve: 'call.resolved' }

/**
 * A doorbell rung by the changes `matches` picks (and by news that changes were missed), for
 * as long as the caller waits; subscribed before the request is stored, so that an outcome
 * pushed before the first wait is not lost.
 */
function outcomeBell(feed: ControlOutcomeFeed | undefined, matches: (change: { handled: string } | { session: string }) => boolean): { bell: Doorbell; stop(): void } {
  const bell = new Doorbell()
  const stop = feed?.subscribe((change) => {
    if (!change || matches(change)) bell.ring()
  })
  return { bell, stop: () => stop?.() }
}

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
    if (decision.kind === 'resolve') return turn.resolveCall(callId, decision.resolution)
    const by = decision.by !== undefined ? { by: decision.by } : {}
    if (decision.kind === 'deny') return turn.deny(callId, { ...(decision.reason !== undefined ? { reason: decision.reason } : {}), ...by })
    await turn.approve(callId, { ...(decision.input === undefined ? {} : { input: decision.input }), ...by })
  }
  await deps.parkingOf?.(turnId)
  let turn = deps.localTurn(turnId)
  // A parked turn: nobody runs it; this engine takes it and decides here.
  if (!turn && deps.settleParked && (await deps.settleParked(turnId, apply))) return
  if (!turn) {
    await deps.recover() // a turn left waiting by an engine that is gone
    turn = deps.localTurn(turnId)
  }
  if (turn) return apply(turn)
  const id = newId('ctl')
  const { bell, stop } = outcomeBell(deps.outcomes, (change) => 'handled' in change && change.handled === id)
  try {
    await storeDecision(deps, id, turnId, callId, decision)
    const deadline = Date.now() + deps.waitMs
    while (Date.now() < deadline) {
      await bell.wait(deps.checkEveryMs)
      const outcome = await deps.store.controls.outcome(id)
      if (!outcome?.handled) {
        // Parked by its engine before it applied the request: taken here, this engine's poller applies it.
        await takeIfParked(deps, turnId)
        continue
      }
      if (outcome.result) throw notWaitingError(decision, turnId, callId, outcome.result)
      return
    }
  } finally {
    stop()
  }
}

/**
 * Stores `decision` as the control request `id` for whichever engine runs the turn, or takes it
 * (a parked turn's taker applies its pending requests), to apply. Throws
 * `ApprovalNotPendingError` (a resolution: `CallNotWaitingError`) when the turn does not wait for
 * it; an edited input is checked first.
 *
 * @example
 * await storeDecision(deps, newId('ctl'), turnId, 'call_1', { kind: 'approve' })
 */
export async function storeDecision(deps: { store: Pick<Store, 'turns' | 'controls' | 'messages'>; checkEdit: RemoteControlDeps['checkEdit'] }, id: string, turnId: string, callId: string, decision: Decision): Promise<void> {
  const notWaiting = (why: string) => notWaitingError(decision, turnId, callId, why)
  const record = await deps.store.turns.get(turnId)
  if (!record) throw notWaiting('no such turn')
  if (record.outcome) throw notWaiting(`the turn ended (${record.outcome})`)
  if (waitOf(record.state)?.settledBy.includes(settlingEvent[decision.kind]) !== true) throw notWaiting(`the turn is in '${record.state}'`)
  const call = (await storedToolParts(deps.store, record.sessionId, turnId)).find((part) => part.callId === callId)
  if (!call || !waitsFor(call, decision)) throw notWaiting(call ? `the call is ${call.state.status}` : 'the turn has no such call')
  const edited =
    decision.kind === 'approve' && decision.input !== undefined
      ? { input: await deps.checkEdit(turnId, callId, decision.input) }
      : decision.kind === 'resolve'
        ? { input: decision.resolution }
        : {}
  const by = decision.kind !== 'resolve' && decision.by !== undefined ? { by: decision.by } : {}
  await deps.store.controls.add({ id, turnId, kind: decision.kind, callId, reason: (decision.kind === 'deny' ? decision.reason : undefined) ?? null, createdAt: Date.now(), ...edited, ...by })
}

/** Whether `call` waits for `decision`: approval for approve and deny, a resolution (in doubt, deferred) for resolve. */
function waitsFor(call: ToolPart, decision: Decision): boolean {
  if (decision.kind === 'resolve') return isWaitingCall(call)
  return callWait(call.state)?.kind === 'approval'
}

/** Why `decision` cannot be applied: a resolution is for a call in doubt or deferred, a decision for one awaiting approval. */
function notWaitingError(decision: Decision, turnId: string, callId: string, why: string): ApprovalNotPendingError | CallNotWaitingError {
  return decision.kind === 'resolve' ? new CallNotWaitingError(turnId, callId, why) : new ApprovalNotPendingError(turnId, callId, why)
}

/** A turn parked while a request to it was stored: taken into this engine (whose poller then applies the request). */
async function takeIfParked(deps: RemoteControlDeps, turnId: string): Promise<void> {
  if (!deps.settleParked || (await deps.store.turns.get(turnId))?.owner !== parkedOwner) return
  await deps.settleParked(turnId, () => undefined)
}

/** Stores a request to abort `turnId`, for whoever runs it (or takes it next) to apply. */
export function storeAbort(store: Pick<Store, 'controls'>, turnId: string, reason: string): Promise<void> {
  return store.controls.add({ id: newId('ctl'), turnId, kind: 'abort', callId: null, reason, createdAt: Date.now() })
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
  if (open.owner === parkedOwner && deps.settleParked && (await deps.settleParked(open.id, (turn) => turn.abort(reason)))) return
  await deps.recover()
  const taken = deps.localTurn(open.id)
  if (taken) return taken.abort(reason)
  const { bell, stop } = outcomeBell(deps.outcomes, (change) => 'session' in change && change.session === sessionId)
  try {
    await storeAbort(deps.store, open.id, reason)
    const deadline = Date.now() + deps.waitMs
    while (Date.now() < deadline) {
      await bell.wait(deps.checkEveryMs)
      const row = await deps.store.turns.get(open.id)
      if (row?.outcome) return
      if (row?.owner === parkedOwner && deps.settleParked && (await deps.settleParked(open.id, (turn) => turn.abort(reason)))) return
    }
  } finally {
    stop()
  }
}
