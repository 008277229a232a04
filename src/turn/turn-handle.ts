/**
 * A running turn's handle: what `engine.prompt` returns (`done`, `abort`, `approve`, `deny`,
 * the actor) and what the engine holds of it (its fence, leases, detach at close). The turn's
 * log decides how the turn ends (`TurnLog.end`); the handle reports that end to its caller:
 * `done` settles here, once, from the log's `ended`.
 */
import type { Actor } from 'xstate'
import { retryWaitStates, turnStateName, waitOf, type TurnMachine } from '../../machines/turn.machine'
import { ApprovalNotPendingError, CallNotWaitingError, EngineClosedError, TurnOutcomeUnknownError, TurnParkedError, TurnStalledError, type SerializedError, type TurnchartError, type TurnOwnershipLostError } from '../core/errors'
import { errorFromRecord } from '../core/errors/restore'
import type { ToolPart, TurnOutcome, TurnUsage, Usage } from '../core/types'
import { withDescendants } from '../core/usage'
import type { TurnFence } from '../store/store'
import { checkApprovalEdit } from '../tools/approval-edit'
import { approveCall, denyCall, expireCall, expireDeferredCall, isWaitingCall } from '../tools/tool-part'
import { settleWaitingCall, type CallResolution } from '../tools/resolve-call'
import { waitingCallsOf } from '../tools/run-tools'
import type { HandoffPoint } from './handoff-point'
import { watchTurn, type Stall, type StallWatch } from './stall-watch'
import type { TurnLog } from './turn-log/turn-log'
import type { TurnEnd } from './turn-log/turn-end'
import { turnResult } from './turn-result'
import type { TurnScope } from './turn-scope'
import type { AsyncIterableStream, TurnListener, TurnStreamPart } from './turn-stream'

/** `OUTPUT`: the type of the prompt's structured output (`Output.object({ schema })`), inferred from its schema. */
export interface TurnResult<OUTPUT = unknown> {
  turnId: string
  sessionId: string
  outcome: TurnOutcome
  /**
   * Why the turn failed or was aborted: an error instance (`isInstance` and `instanceof` work);
   * `error.toJSON()` is the record stored on the assistant message.
   */
  error?: TurnchartError & SerializedError
  /** Tokens and cost of the turn's steps and compactions; run trees: its descendants' apart and together (`usage.descendants`, `usage.tree`). */
  usage: TurnUsage
  /** The text of the turn's last step (its final answer when it completed). */
  text: string
  /**
   * Structured output (the prompt's or the engine's `output`): the final answer parsed and
   * validated against the schema, when the turn completed. Absent without `output`. (Not the
   * chart's own output, `{ outcome, error }`.)
   */
  output?: OUTPUT
}

/** `approve`'s options: an edited input (tools named in `editableApprovals`), and who approved (kept on the receipt). */
export interface ApproveOptions {
  input?: unknown
  /** Who approved: an id of the app's (a user id, an email); stored on the call's receipt. */
  by?: string
}

/** `deny`'s options: the reason the model sees, and who denied (kept on the receipt). */
export interface DenyOptions {
  reason?: string
  by?: string
}

/** `deny`'s second argument, a reason or `{ reason, by }`, as options. */
export function denyOptions(reason: string | DenyOptions | undefined): DenyOptions {
  return typeof reason === 'string' ? { reason } : (reason ?? {})
}

/** A running turn. `OUTPUT`: the type of `done`'s structured `output`. */
export interface Turn<OUTPUT = unknown> {
  readonly id: string
  readonly sessionId: string
  /** The XState actor of this turn (inspect it, subscribe to it, or stop it: stopping aborts). */
  readonly actor: Actor<TurnMachine>
  /**
   * Settles when the turn's last row is written: resolves with its outcome. Rejects when the
   * turn could not start (e.g. unknown session: nothing was written), when the engine closed
   * (`EngineClosedError`) or another engine took the turn over (`TurnOwnershipLostError`):
   * the turn goes on elsewhere; and with `TurnOutcomeUnknownError` when its final row could not
   * be written: the turn's row stays open, and recovery ends or resumes it.
   */
  readonly done: Promise<TurnResult<OUTPUT>>
  /**
   * A new reader of the turn's typed parts (`text-delta`, `reasoning-delta`, tool calls and
   * results, `start-step`/`finish-step`, approval requests, retries, `finish`, `error`,
   * `abort`): a `ReadableStream` that is also an `AsyncIterable`. Each access is a new reader;
   * one that starts late gets the parts so far first (each part's text in one delta).
   */
  readonly fullStream: AsyncIterableStream<TurnStreamPart>
  /** A new reader of the answer's text deltas (reasoning left out), as `fullStream`. */
  readonly textStream: AsyncIterableStream<string>
  /**
   * The turn as the AI SDK's UI message stream (what `useChat` reads), in a `Response`: text,
   * reasoning, tool calls, approval requests, the chart's state (`data-turn-state`), then
   * `finish`, `error` or `abort`. Each call is a new stream; one that starts late, or after the
   * turn ended, first sends what the turn produced so far.
   */
  toUIMessageStreamResponse(options?: { headers?: Record<string, string> }): Response
  /**
   * Calls `listener` with each event of this turn from now on (the engine's bus carries every
   * turn's). `{ replay: true }`: first, in this call, the turn so far: each message and part as
   * it is now (`change: 'open'`, a text part with its text so far), then the last events that
   * are not parts (transitions, statuses, approval requests, the end; at most 64). Returns the
   * unsubscribe.
   */
  subscribe(listener: TurnListener, options?: { replay?: boolean }): () => void
  /** Aborts the turn: the in-flight request and running tools get an aborted signal. */
  abort(reason?: string): void
  /**
   * Approves a tool call waiting in `awaiting-approval`; rejects with `ApprovalNotPendingError`
   * otherwise; resolves once the decision is stored. `input`: the call runs with it instead of the model's (only for the tools the
   * engine names in `editableApprovals`; checked against the tool's schema first: a bad one is
   * an `InvalidArgumentError` and the call stays pending).
   */
  approve(callId: string, options?: ApproveOptions): Promise<void>
  /**
   * Denies a tool call waiting in `awaiting-approval`: its part becomes an error carrying
   * `reason`, which the model sees. Resolves once the decision is stored; rejects with
   * `ApprovalNotPendingError` when the call is not waiting. `{ reason, by }`: with who denied
   * it, kept on the receipt.
   */
  deny(callId: string, reason?: string | DenyOptions): Promise<void>
  /**
   * Settles a call of this turn that waits in `call-in-doubt` or `awaiting-deferred`: `{ output }`
   * (the effect happened / its result), `{ error }` (the model sees this error) or, for a call in
   * doubt, `{ retry: true }` (it runs again with the same idempotency key). Resolves once stored;
   * rejects with `CallNotWaitingError` when the call does not wait.
   */
  resolveCall(callId: string, resolution: CallResolution): Promise<void>
  /**
   * Detaches the turn from this engine without ending it (at close): its effects stop, its
   * pending writes land, and the turn stays open in the database for the next engine to resume.
   * `done` then rejects with `EngineClosedError`.
   */
  detach(): Promise<void>
}

/** A turn as its engine holds it: the public handle plus what leases and fencing need. */
export interface RunningTurn extends Turn {
  /** Who may write the turn (owner and epoch). */
  readonly fence: TurnFence
  /** True once its row exists and until its final row is being written (what lease renewal covers). */
  readonly begun: boolean
  /** Another engine owns the turn (a lease renewal found it so): stop here, writing nothing. */
  lose(error: TurnOwnershipLostError): void
  /**
   * The turn's stall at `now` (stall-watch.ts): its write or its state's work past its bound
   * plus `marginMs` without the turn moving. Undefined while it moves or may still, and for a
   * turn that has not begun or has settled. Asked at each lease renewal.
   */
  stalled(now: number, marginMs: number): Stall | undefined
  /** Stops the turn here as stalled: nothing more is written by it, `turn.stalled` is published, `done` rejects with `TurnStalledError`. */
  stall(stall: Stall): void
  /** Settles when every transition recorded so far has been written (or failed to be). */
  recorded(): Promise<void>
  /**
   * Settles what the turn waits on whose stored deadline is past `now` (the deadline sweep): an
   * approval past its `expiresAt` is a denial the model sees, a deferred call past its deadline
   * an error the model sees. Resolves once stored, with how many it settled.
   */
  expire(now: number): Promise<number>
  /**
   * Hands the turn over (`close({ handoff: true })`): it goes on to its next step gate (at most
   * `timeoutMs`), where its row is written and it is detached, to be resumed by the next engine
   * with nothing in flight; a turn waiting on a person (approval) or on a retry's delay is
   * detached at once; past `timeoutMs` it is detached where it is (as `detach`). Resolves with
   * how it left: `'gate'`, `'waiting'`, `'timeout'`, or `'ended'` (it finished meanwhile).
   */
  handoff(timeoutMs: number): Promise<'gate' | 'waiting' | 'timeout' | 'ended'>
  /**
   * Parks the turn (it waits in a parkable state): like `detach`, its actor stops and its writes
   * land, `handOver(fence)` gives its row away (to the parked owner; true when it did), and it ends here `parked`
   * (`done` rejects with `TurnParkedError`). Resolves true when it was parked, false when it was
   * not waiting in a parkable state any more (it goes on).
   */
  park(handOver: (fence: TurnFence) => Promise<boolean>): Promise<boolean>
}

/**
 * A turn's UI message stream in a `Response`, built by the layer that owns the AI SDK's UI
 * stream (src/ui-stream, above this one): the engine hands it to every turn.
 */
export type UIMessageStreamOfTurn = (turn: Turn, options: { headers?: Record<string, string> }) => Response

export interface TurnHandleParts {
  actor: Actor<TurnMachine>
  scope: TurnScope
  log: TurnLog
  /** Where a handoff holds the turn (its next step gate). */
  handoff?: HandoffPoint
  /** Called once when the turn has settled (after its last write), successfully or not. */
  onSettled(turn: RunningTurn): void
  /** Run trees: the usages of the turn's descendants (undefined: it started no child), added to `done`'s usage. */
  descendantUsages?(): Promise<Usage[] | undefined>
  /** What `toUIMessageStreamResponse()` answers with (absent: it throws, as a turn run without an engine has no UI stream). */
  uiMessageStream?: UIMessageStreamOfTurn
  /** How long a write of the turn waits out a database outage (`storage.outageMs`): the bound of a write the stall watch allows. */
  outageMs: number
}

export class TurnHandle implements RunningTurn {
  readonly id: string
  readonly sessionId: string
  readonly actor: Actor<TurnMachine>
  readonly done: Promise<TurnResult>
  readonly #parts: TurnHandleParts
  #resolve!: (result: TurnResult) => void
  #reject!: (error: unknown) => void
  /** Settles once the log's end is reported (`done` may still wait for the usage row). */
  readonly #reported: Promise<void>
  #started = false
  #settled = false
  /** Detached by a handoff (`handoff`): `done`'s EngineClosedError says so. */
  #handedOff = false
  readonly #watch: StallWatch

  constructor(parts: TurnHandleParts) {
    this.#parts = parts
    this.id = parts.scope.turnId
    this.sessionId = parts.scope.sessionId
    this.actor = parts.actor
    this.done = new Promise<TurnResult>((resolve, reject) => {
      this.#resolve = resolve
      this.#reject = reject
    })
    // A caller that never awaits `done` must not get an unhandled rejection.
    this.done.catch(() => undefined)
    this.#reported = parts.log.ended.then((end) => this.#report(end))
    this.#watch = watchTurn(this.actor, parts.scope, parts.outageMs)
  }

  get fullStream(): AsyncIterableStream<TurnStreamPart> {
    return this.#parts.scope.events.fullStream()
  }

  get textStream(): AsyncIterableStream<string> {
    return this.#parts.scope.events.textStream()
  }

  toUIMessageStreamResponse(options: { headers?: Record<string, string> } = {}): Response {
    if (!this.#parts.uiMessageStream) throw new Error(`turn ${this.id}: no UI message stream was given to this turn's runner`)
    return this.#parts.uiMessageStream(this, options)
  }

  get fence(): TurnFence {
    return this.#parts.scope.fence
  }

  get begun(): boolean {
    return this.#started && !this.#settled && !this.#parts.log.ending
  }

  abort(reason?: string): void {
    this.actor.send({ type: 'turn.abort', ...(reason ? { reason } : {}) })
  }

  async approve(callId: string, options: ApproveOptions = {}): Promise<void> {
    let part = this.#pendingApproval(callId)
    let edited: { input: unknown } | undefined
    if (options.input !== undefined) {
      const { config } = this.#parts.scope
      edited = { input: await checkApprovalEdit(config.tools, config.editableApprovals, part.tool, options.input) }
      part = this.#pendingApproval(callId) // (still pending after the check)
    }
    // Staged, not flushed: the decision commits in the transition's own transaction, before the tool can start.
    const receipt = approveCall(part, Date.now(), edited, options.by !== undefined ? { by: options.by } : {})
    this.#parts.scope.writer.stage(part)
    // The receipt rides in the logged event too: the log outlives a revert of the messages.
    this.actor.send({ type: 'tool.approved', callId, receipt: { tool: part.tool, ...receipt } })
    // Resolved once stored: a crash after this cannot lose the decision (or its edit).
    await this.#parts.log.settled()
  }

  async deny(callId: string, reasonOrOptions?: string | DenyOptions): Promise<void> {
    const { reason, by } = denyOptions(reasonOrOptions)
    const part = this.#pendingApproval(callId)
    const receipt = denyCall(part, reason, Date.now(), by !== undefined ? { by } : {})
    this.#parts.scope.writer.stage(part)
    this.actor.send({ type: 'tool.denied', callId, ...(reason ? { reason } : {}), receipt: { tool: part.tool, ...receipt } })
    await this.#parts.log.settled()
  }

  async expire(now: number): Promise<number> {
    const wait = waitOf(turnStateName(this.actor.getSnapshot()))
    if (this.#settled || !wait) return 0
    const expired = wait.awaits === 'decision' ? this.#expireApprovals(now) : wait.awaits === 'time' ? this.#liftThrottle(now) : this.#expireCalls(now)
    await this.#parts.log.settled()
    return expired
  }

  /** A throttled turn whose time came: the step asks its model's rate limit again. */
  #liftThrottle(now: number): number {
    const until = this.actor.getSnapshot().context.throttledUntil
    if (until !== null && until > now) return 0
    this.actor.send({ type: 'throttle.lifted' })
    return 1
  }

  /** Approvals past their `expiresAt` (`approvalTimeoutMs`): denials the model sees. */
  #expireApprovals(now: number): number {
    let expired = 0
    for (const callId of [...this.actor.getSnapshot().context.pendingApprovals]) {
      const part = this.#parts.scope.messages.stepTools.find((p) => p.callId === callId)
      if (!part || part.state.status !== 'pending' || part.state.expiresAt === undefined || part.state.expiresAt > now) continue
      const receipt = expireCall(part, now)
      this.#parts.scope.writer.stage(part)
      this.actor.send({ type: 'tool.denied', callId, reason: 'the approval expired', receipt: { tool: part.tool, ...receipt } })
      expired++
    }
    return expired
  }

  async resolveCall(callId: string, resolution: CallResolution): Promise<void> {
    const part = this.#waitingCall(callId)
    const { config, messages, writer } = this.#parts.scope
    const { stepTools } = messages
    const how = await settleWaitingCall(part, resolution, { tools: config.tools, maxOutputBytes: config.toolExecution.maxOutputBytes }, { turnId: this.id }, Date.now())
    this.#waitingCall(callId, part) // (still waiting after the output's conversion)
    // Staged, not flushed: the resolution commits in the transition's own transaction.
    writer.stage(part)
    this.actor.send({ type: 'call.resolved', callId, how, deadline: waitingCallsOf(stepTools).deadline })
    await this.#parts.log.settled()
  }

  /** Deferred calls past their deadline: errors the model sees. */
  #expireCalls(now: number): number {
    const { messages, writer } = this.#parts.scope
    const { stepTools } = messages
    const expired = stepTools.filter((part) => expireDeferredCall(part, now))
    for (const part of expired) {
      writer.stage(part)
      this.actor.send({ type: 'call.resolved', callId: part.callId, how: 'expired', deadline: waitingCallsOf(stepTools).deadline })
    }
    return expired.length
  }

  async detach(): Promise<void> {
    if (this.#settled) return
    // Nothing more is recorded, the effects stop; what is queued is written, then what streamed so far.
    await this.#parts.log.detach(() => this.actor.stop())
    await this.#reported
  }

  async handoff(timeoutMs: number): Promise<'gate' | 'waiting' | 'timeout' | 'ended'> {
    const point = this.#parts.handoff
    if (this.#settled) return 'ended'
    point?.request()
    const state = turnStateName(this.actor.getSnapshot())
    // Nothing runs while the turn waits on a person, the world or a retry's delay: its row is committed, it goes at once.
    this.#handedOff = true
    if (waitOf(state) || retryWaitStates.has(state) || !point) {
      await this.detach()
      return 'waiting'
    }
    let timer: NodeJS.Timeout | undefined
    const how = await Promise.race([
      point.reached.then(() => 'gate' as const),
      this.#reported.then(() => 'ended' as const),
      new Promise<'timeout'>((resolve) => {
        timer = setTimeout(() => resolve('timeout'), timeoutMs)
        timer.unref()
      }),
    ])
    clearTimeout(timer)
    if (how === 'ended' || this.#settled) return 'ended'
    // At the gate: its row (and the finished step's parts) written, so the next engine resumes there.
    if (how === 'gate') await this.#parts.log.commitHeld()
    await this.detach()
    return how
  }

  lose(error: TurnOwnershipLostError): void {
    if (!this.#settled) this.#parts.log.lose(error)
  }

  stalled(now: number, marginMs: number): Stall | undefined {
    return this.#started && !this.#settled ? this.#watch.check(now, marginMs) : undefined
  }

  stall(stall: Stall): void {
    if (!this.#settled) this.#parts.log.stall(stall)
  }

  async park(handOver: (fence: TurnFence) => Promise<boolean>): Promise<boolean> {
    const state = turnStateName(this.actor.getSnapshot())
    if (this.#settled || this.#parts.log.ending || !waitOf(state)?.parks) return false
    // Its entering row must be written first: what recovery resumes from is the waiting state.
    await this.#parts.log.settled()
    if (this.#settled || turnStateName(this.actor.getSnapshot()) !== state) return false
    await this.#parts.log.detach(() => this.actor.stop(), { kind: 'parked', state }, () => handOver(this.fence))
    await this.#reported
    return true
  }

  recorded(): Promise<void> {
    return this.#parts.log.settled()
  }

  subscribe(listener: TurnListener, options: { replay?: boolean } = {}): () => void {
    return this.#parts.scope.events.subscribe(listener, options)
  }

  /** The turn's row exists (its prompt is stored, or it was restored): leases and control cover it now. */
  started(): void {
    this.#started = true
  }

  /** The turn could not start (unknown or busy session, a cancelled queued prompt): nothing was written. */
  notStarted(error: unknown): void {
    this.#parts.log.end({ kind: 'not-started', error })
  }

  /**
   * Reports the end the log decided: the turn's effects stop (a finished turn's actor is done
   * already), the session is free at once, and `done` settles (after the usage row when the
   * turn finished).
   */
  #report(end: TurnEnd): void {
    this.actor.stop()
    this.#settled = true
    this.#parts.onSettled(this)
    const { events } = this.#parts.scope
    switch (end.kind) {
      case 'finished':
        return this.#finished(end)
      case 'unwritten':
        return this.#reject(new TurnOutcomeUnknownError({ turnId: this.id, sessionId: this.sessionId, cause: end.error }))
      case 'lost':
        return this.#reject(end.error)
      case 'stalled': {
        const { kind: _kind, ...stall } = end
        const stalled = new TurnStalledError({ turnId: this.id, sessionId: this.sessionId, ...stall })
        events.close(stalled.toJSON())
        return this.#reject(stalled)
      }
      case 'detached': {
        const closed = this.#handedOff
          ? new EngineClosedError(`run turn ${this.id}: the engine closed and handed the turn over; another engine resumes it`, { handedOff: true })
          : new EngineClosedError(`run turn ${this.id}: the engine closed; the turn stays open in the database for the next engine to resume`)
        events.close(closed.toJSON())
        return this.#reject(closed)
      }
      case 'parked': {
        const parked = new TurnParkedError({ turnId: this.id, sessionId: this.sessionId, state: end.state })
        events.close(parked.toJSON())
        return this.#reject(parked)
      }
      case 'not-started':
        events.close()
        return this.#reject(end.error)
    }
  }

  /** The turn's last row is written (its usage with it): `done` adds its descendants' usage. */
  #finished({ kind: _kind, error, ...end }: Extract<TurnEnd, { kind: 'finished' }>): void {
    const { usage, text } = turnResult(this.#parts.scope)
    void (async () => {
      const descendants = await this.#parts.descendantUsages?.().catch(() => undefined)
      const { output } = this.#parts.scope
      this.#resolve({ turnId: this.id, sessionId: this.sessionId, ...end, usage: withDescendants(usage, descendants), text, ...(output ? { output: output.value } : {}), ...(error ? { error: errorFromRecord(error) } : {}) })
    })()
  }

  /** The part of `callId` when it waits for its result (in doubt, deferred; `expected`: that very part, after an await). */
  #waitingCall(callId: string, expected?: ToolPart): ToolPart {
    const snapshot = this.actor.getSnapshot()
    const state = turnStateName(snapshot)
    if (waitOf(state)?.awaits !== 'result') throw new CallNotWaitingError(this.id, callId, `the turn is in '${state}'`)
    const { inDoubtCalls, deferredCalls } = snapshot.context
    if (!inDoubtCalls.includes(callId) && !deferredCalls.includes(callId)) {
      throw new CallNotWaitingError(this.id, callId, `waiting calls: ${[...inDoubtCalls, ...deferredCalls].join(', ') || 'none'}`)
    }
    const part = this.#parts.scope.messages.stepTools.find((p) => p.callId === callId)
    if (!part || (expected && part !== expected) || (!expected && !isWaitingCall(part))) throw new CallNotWaitingError(this.id, callId, 'its part is not in doubt or deferred')
    return part
  }

  #pendingApproval(callId: string): ToolPart {
    // A handle whose turn left it (parked, detached) decides nothing: its actor is stopped.
    if (this.#settled) throw new ApprovalNotPendingError(this.id, callId, 'this handle no longer runs the turn (it ended, was parked or detached): decide through the engine')
    const snapshot = this.actor.getSnapshot()
    const state = turnStateName(snapshot)
    if (waitOf(state)?.awaits !== 'decision') throw new ApprovalNotPendingError(this.id, callId, `the turn is in '${state}'`)
    if (!snapshot.context.pendingApprovals.includes(callId)) {
      throw new ApprovalNotPendingError(this.id, callId, `pending calls: ${snapshot.context.pendingApprovals.join(', ') || 'none'}`)
    }
    const part = this.#parts.scope.messages.stepTools.find((p) => p.callId === callId)
    if (!part || part.state.status !== 'pending') throw new ApprovalNotPendingError(this.id, callId, 'its part is not pending')
    return part
  }
}
