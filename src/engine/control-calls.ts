/**
 * The engine's control calls: `abort`, `approve` and `deny` work from any engine. A turn this
 * engine runs is told at once; one another engine runs gets a stored request, which that
 * engine's control poller applies at its next poll, or at once when PostgreSQL notifies it
 * (see src/control/).
 */
import type { ResolvedConfig } from '../config/resolved-config'
import { startControlPoller, type ControlPoller } from '../control/control-poller'
import { requestAbort, requestDecision, type Decision, type RemoteControlDeps } from '../control/remote-control'
import { optionalString, requireId } from '../core/arguments'
import type { Store } from '../store/store'
import type { RunningTurns } from './running-turns'
import type { StoreFeeds } from './store-feeds'
import { ApprovalNotPendingError, InvalidArgumentError, NothingToWakeError } from '../core/errors'
import type { ToolPart } from '../core/types'
import { checkApprovalEdit } from '../tools/approval-edit'
import { checkResolution, type CallResolution } from '../tools/resolve-call'
import { storedToolParts } from '../control/stored-turns'
import type { ApproveOptions, DenyOptions } from '../turn/turn-handle'
import { callWait } from '../core/call-wait'

export interface ControlCalls {
  /**
   * Approves a tool call of a turn in `awaiting-approval`. Works from any engine on the
   * database: a turn whose engine is gone is taken over first; a turn another live engine runs
   * gets a stored request that engine applies within `controlPollIntervalMs`, or at once with
   * PostgreSQL notifications (this resolves once it did). Throws `ApprovalNotPendingError` when
   * the call is not waiting for approval.
   *
   * `options.input`: the call runs with this input instead of the model's (only for the tools
   * named in `editableApprovals`; an edit of another tool is refused). It is checked against
   * the tool's schema first: a bad one is an `InvalidArgumentError` and the call stays pending.
   * The part keeps both (`state.input`: the approved one, which the model's next request shows
   * as the call's input; `state.modelInput`: the model's).
   *
   * `options.by`: who approved (an id of the app's), kept on the call's receipt with the time
   * and the SHA-256 of the approved input (`engine.approvalReceipts`); the tool then runs only
   * with an input of that digest.
   */
  approve(turnId: string, callId: string, options?: ApproveOptions): Promise<void>
  /**
   * Denies such a call: its part becomes an error carrying the reason, and the model sees it.
   * The third argument is the reason, or `{ reason, by }` (`by`: who denied, on the receipt).
   */
  deny(turnId: string, callId: string, reason?: string | DenyOptions): Promise<void>
  /**
   * Settles a tool call that waits in `call-in-doubt` (its outcome is unknown) or
   * `awaiting-deferred` (its tool returned `defer()`), from any engine on the database (as
   * `approve` does): `{ output }` (the effect happened, or the deferred result: the model sees
   * it), `{ error }` (the model sees this error), `{ retry: true }` (a call in doubt runs again,
   * with the same `idempotencyKey`). The turn goes on when every call of its step has its result.
   * Throws `CallNotWaitingError` when the call does not wait, `InvalidArgumentError` for a
   * resolution of another shape.
   */
  resolveCall(turnId: string, callId: string, resolution: CallResolution): Promise<void>
  /**
   * Brings forward the deadline of the turn's calls that settle themselves at one (a tool's
   * `sleep()`, a `defer({ onDeadline })`): each is resolved now with its `onDeadline` output, from
   * any engine (as `resolveCall`: a parked turn is taken), and the turn goes on when every call of
   * its step has its result. Throws `NothingToWakeError` when none of its calls waits so.
   */
  wake(turnId: string): Promise<void>
  /** Aborts the session's running turn, if any, whichever engine runs it; resolves when it has ended. */
  abort(sessionId: string): Promise<void>
}

export interface EngineControl {
  calls: ControlCalls
  /** Applies the requests stored for this engine's turns (polls only while a turn runs here). */
  poller: ControlPoller
}

/**
 * @example
 * const control = engineControl({ store, config, running, recover: () => engine.recover(), requireOpen })
 */
export function engineControl(deps: {
  store: Store
  config: ResolvedConfig
  running: RunningTurns
  /** Takes over the turns of engines that are gone (a request to one of them would wait forever). */
  recover(): Promise<unknown>
  requireOpen(operation: string): void
  /** PostgreSQL notifications: requests applied, and outcomes heard, as soon as they are stored. */
  feeds?: Pick<StoreFeeds, 'controlRequests' | 'controlOutcomes'>
  /** Parked turns: taken here and decided (src/engine/parked-turns.ts). */
  settleParked?: RemoteControlDeps['settleParked']
  parkingOf?: RemoteControlDeps['parkingOf']
}): EngineControl {
  const { config, running, requireOpen } = deps
  const remote = remoteControl(deps)
  const poller = startControlPoller({
    requests: deps.store.controls,
    running: () => running.begun(),
    intervalMs: config.controlPollIntervalMs,
    onError: () => undefined, // the database is unreachable: the next poll tries again
    ...(deps.feeds ? { feed: deps.feeds.controlRequests } : {}),
  })
  const decide = (turnId: string, callId: string, decision: Decision) => requestDecision(remote, requireId('turnId', turnId), requireId('callId', callId), decision)
  const calls: EngineControl['calls'] = {
    async abort(sessionId) {
      requireOpen('abort a turn')
      await abortAnywhere(remote, running, requireId('sessionId', sessionId))
    },
    async approve(turnId, callId, options) {
      requireOpen('approve a tool call')
      await decide(turnId, callId, approveDecision(options))
    },
    async resolveCall(turnId, callId, resolution) {
      requireOpen('resolve a tool call')
      await decide(turnId, callId, { kind: 'resolve', resolution: checkResolution(resolution) })
    },
    async wake(turnId) {
      requireOpen('wake a turn')
      const calls = await callsWaitingForATime(deps.store, requireId('turnId', turnId))
      for (const { callId, output } of calls) await decide(turnId, callId, { kind: 'resolve', resolution: { output } })
    },
    async deny(turnId, callId, reasonOrOptions) {
      requireOpen('deny a tool call')
      const { reason, by } = denyArguments(reasonOrOptions)
      await decide(turnId, callId, { kind: 'deny', reason, ...(by !== undefined ? { by } : {}) })
    },
  }
  return { calls, poller }
}

/** The stored calls of an unfinished turn that settle themselves at their deadline, with what they then return. */
async function callsWaitingForATime(store: Store, turnId: string): Promise<Array<{ callId: string; output: unknown }>> {
  const turn = await store.turns.get(turnId)
  if (!turn) throw new NothingToWakeError(turnId, 'no such turn')
  if (turn.outcome) throw new NothingToWakeError(turnId, `the turn ended (${turn.outcome})`)
  const parts = await storedToolParts(store, turn.sessionId, turnId)
  const calls = parts.flatMap((p) => {
    const wait = callWait(p.state)
    return wait?.kind === 'sleep' ? [{ callId: p.callId, output: wait.output }] : []
  })
  if (calls.length === 0) throw new NothingToWakeError(turnId, `the turn is in '${turn.state}'`)
  return calls
}

/** `approve`'s options checked (`{ input, by }`), as the decision stored. */
export function approveDecision(options: unknown): Extract<Decision, { kind: 'approve' }> {
  if (options !== undefined && (typeof options !== 'object' || options === null || Array.isArray(options))) {
    throw new InvalidArgumentError('options', options, 'an object like { input, by }')
  }
  const given = (options ?? {}) as Record<string, unknown>
  const unknown = Object.keys(given).find((key) => key !== 'input' && key !== 'by')
  if (unknown) throw new InvalidArgumentError(`options.${unknown}`, given[unknown], 'input or by (the options of approve)')
  const by = optionalString('options.by', given.by)
  return { kind: 'approve', ...(given.input !== undefined ? { input: given.input } : {}), ...(by !== undefined ? { by } : {}) }
}

/** `deny`'s third argument checked: a reason, or `{ reason, by }`. */
export function denyArguments(value: unknown): { reason: string | undefined; by: string | undefined } {
  if (value === undefined || typeof value === 'string') return { reason: value, by: undefined }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new InvalidArgumentError('reason', value, 'a string, or an object like { reason, by }')
  const unknown = Object.keys(value).find((key) => key !== 'reason' && key !== 'by')
  if (unknown) throw new InvalidArgumentError(`options.${unknown}`, (value as Record<string, unknown>)[unknown], 'reason or by (the options of deny)')
  const { reason, by } = value as { reason?: unknown; by?: unknown }
  return { reason: optionalString('options.reason', reason), by: optionalString('options.by', by) }
}

/** The engine's side of approve, deny and abort from any engine (src/control/remote-control.ts). */
export function remoteControl(deps: {
  store: Store
  config: ResolvedConfig
  running: RunningTurns
  recover(): Promise<unknown>
  feeds?: Pick<StoreFeeds, 'controlOutcomes'>
  settleParked?: RemoteControlDeps['settleParked']
  parkingOf?: RemoteControlDeps['parkingOf']
}): RemoteControlDeps {
  const { config, running } = deps
  return {
    store: deps.store,
    localTurn: (turnId: string) => running.find(turnId),
    recover: deps.recover,
    waitMs: config.leaseMs + 2 * config.controlPollIntervalMs,
    checkEveryMs: Math.max(10, Math.floor(config.controlPollIntervalMs / 4)),
    checkEdit: async (turnId: string, callId: string, input: unknown) => {
      const call = await waitingCall(deps.store, turnId, callId)
      if (!call) throw new ApprovalNotPendingError(turnId, callId, 'its part is not waiting for approval')
      return checkApprovalEdit(config.tools, config.editableApprovals, call.tool, input)
    },
    ...(deps.feeds ? { outcomes: deps.feeds.controlOutcomes } : {}),
    ...(deps.settleParked ? { settleParked: deps.settleParked } : {}),
    ...(deps.parkingOf ? { parkingOf: deps.parkingOf } : {}),
  }
}

/**
 * Aborts the session's running turn wherever it runs: a stored request when another engine
 * runs it (taken over first when that engine is gone), then this engine's own handle when the
 * turn is (or became) ours; resolves once it ended.
 */
export async function abortAnywhere(remote: RemoteControlDeps, running: RunningTurns, sessionId: string): Promise<void> {
  if (!running.ofSession(sessionId)) await requestAbort(remote, sessionId)
  const turn = running.ofSession(sessionId)
  if (!turn) return
  turn.abort()
  await turn.done.catch(() => undefined)
}

/** The stored part of a call waiting for approval in a turn another engine runs. */
async function waitingCall(store: Store, turnId: string, callId: string): Promise<ToolPart | undefined> {
  const turn = await store.turns.get(turnId)
  if (!turn) return undefined
  return (await storedToolParts(store, turn.sessionId, turnId)).find((p) => p.callId === callId && callWait(p.state)?.kind === 'approval')
}
