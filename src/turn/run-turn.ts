/**
 * Starts one turn: the chart with the real actors (stream, tools, compaction), its actor, and
 * the turn's handle (`done`, `abort`, `approve`, `deny`). What each transition writes and
 * publishes is `record-transitions.ts`'s job.
 */
import { createActor, fromCallback, fromPromise, type Actor, type InspectionEvent, type SnapshotFrom } from 'xstate'
import { turnMachine, turnStateName, type CompactInput, type TurnMachine } from '../../machines/turn.machine'
import type { TurnEvent, TurnInput } from '../../machines/turn.types'
import type { Bus } from '../core/bus'
import { summarize } from '../compaction/summarize'
import type { ResolvedConfig } from '../config/resolve-config'
import { ApprovalNotPendingError, EngineClosedError, MessageAbortedError, serializeError, SessionBusyError, SessionNotFoundError, type SerializedError, type TurnchartError, type TurnOwnershipLostError } from '../core/errors'
import { errorFromRecord } from '../core/errors/restore'
import { approveCall, denyCall } from '../tools/tool-part'
import { newId } from '../core/ids'
import { streamStep } from '../llm/stream-step'
import type { Store, TurnFence } from '../store/store'
import { runTools } from '../tools/run-tools'
import type { ToolPart, TurnOutcome, TurnUsage, UserPartDraft } from '../core/types'
import { recordTurnResult } from './turn-result'
import { publishApprovalRequest, TransitionRecorder } from './record-transitions'
import { TurnScope } from './turn-scope'

export interface TurnResult {
  turnId: string
  sessionId: string
  outcome: TurnOutcome
  /**
   * Why the turn failed or was aborted: an error instance (`isInstance` and `instanceof` work);
   * `error.toJSON()` is the record stored on the assistant message.
   */
  error?: TurnchartError & SerializedError
  /** Tokens and cost of the turn's steps and compactions. */
  usage: TurnUsage
  /** The text of the turn's last step (its final answer when it completed). */
  text: string
}

/** What a turn needs beyond its prompt (see src/conversation/turn-options.ts). */
export interface TurnRequest {
  /** The turn's id (a queued prompt's, given when it was queued); default a new one. */
  turnId?: string
  /** The chart's step limit. */
  maxSteps?: number
  /** Awaited before the prompt is stored (an interrupted turn's end). */
  before?(): Promise<void>
  /** Runs in the transaction that stores the prompt, after the turn row is inserted. */
  prepare?(tx: Store, scope: TurnScope): Promise<void>
}

/** A running turn. */
export interface Turn {
  readonly id: string
  readonly sessionId: string
  /** The XState actor of this turn (inspect it, subscribe to it, or stop it: stopping aborts). */
  readonly actor: Actor<TurnMachine>
  /** Settles when the turn's last row is written: resolves with its outcome; rejects only when the turn could not start (e.g. unknown session). */
  readonly done: Promise<TurnResult>
  /** Aborts the turn: the in-flight request and running tools get an aborted signal. */
  abort(reason?: string): void
  /** Approves a tool call waiting in `awaiting-approval`; throws `ApprovalNotPendingError` otherwise. */
  approve(callId: string): void
  /** Denies a tool call waiting in `awaiting-approval`: its part becomes an error carrying `reason`, which the model sees. */
  deny(callId: string, reason?: string): void
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
  /** Settles when every transition recorded so far has been written (or failed to be). */
  recorded(): Promise<void>
}

export interface TurnDeps {
  config: ResolvedConfig
  store: Store
  bus: Bus
  /** This engine's owner id (`host:pid:random`), written on the turns it runs. */
  owner: string
  /** Called once when the turn has settled (after its last write), successfully or not. */
  onSettled(turn: RunningTurn): void
}

/**
 * The turn's scope, made when the turn runs: `storageFailed` (a part flush failed) goes to
 * the turn's recorder, which exists only then.
 */
export type OpenScope = (storageFailed: (error: unknown) => void) => TurnScope

/** Where a turn's actor starts: a new prompt, or a turn restored from the database. */
interface TurnStart {
  turnId: string
  sessionId: string
  input: TurnInput
  openScope: OpenScope
  /** Restored snapshot (recovery) and the seq of the last logged transition. */
  restored?: { snapshot: TurnSnapshot; seq: number }
  /** Runs after the actor started: stores the prompt, or does nothing for a restored turn; its event (if any) is sent. */
  begin(scope: TurnScope, actor: Actor<TurnMachine>): Promise<TurnEvent | null>
}

type TurnSnapshot = SnapshotFrom<TurnMachine>

/**
 * Starts a turn for `prompt` in `sessionId`. The actor exists at once (in `idle`); it moves
 * to `streaming` when the prompt is stored.
 *
 * @example
 * const turn = startTurn(deps, session.id, 'hi')
 * const { outcome } = await turn.done
 */
export function startTurn(deps: TurnDeps, sessionId: string, prompt: string | UserPartDraft[], request: TurnRequest = {}): RunningTurn {
  const turnId = request.turnId ?? newId('trn')
  const input: TurnInput = {
    turnId,
    sessionId,
    autoCompact: deps.config.compaction.auto,
    maxCompactions: deps.config.compaction.maxPerTurn,
    ...(request.maxSteps !== undefined ? { maxSteps: request.maxSteps } : {}),
  }
  return runTurn(deps, {
    turnId,
    sessionId,
    input,
    openScope: (storageFailed) => new TurnScope(deps.config, deps.store, deps.bus, turnId, sessionId, { owner: deps.owner, epoch: 0 }, storageFailed),
    async begin(scope, actor) {
      if (request.before) {
        // (awaited only when given: an abort right after `prompt` must find the prompt's write queued first)
        await request.before()
        if (actor.getSnapshot().status !== 'active') return null // aborted while waiting: nothing stored
      }
      await scope.begin(prompt, async (tx) => {
        const now = Date.now()
        if (!(await tx.sessions.lock(sessionId, now))) throw new SessionNotFoundError(sessionId)
        const open = await tx.turns.openOfSession(sessionId)
        if (open) throw new SessionBusyError(sessionId, open.id)
        await tx.turns.insert(
          {
            id: turnId,
            sessionId,
            state: 'idle',
            outcome: null,
            step: 0,
            attempt: 1,
            retryAt: null,
            error: null,
            time: { created: now, updated: now },
            owner: deps.owner,
            leaseUntil: now + deps.config.leaseMs,
          },
          input,
        )
        await request.prepare?.(tx, scope)
      })
      return { type: 'turn.start' }
    },
  })
}

/**
 * Resumes a turn that recovery restored: its actor starts in `interrupted` (the crash is
 * already logged) and receives `turn.recover`.
 */
export function resumeTurn(
  deps: TurnDeps,
  restored: { turnId: string; sessionId: string; input: TurnInput; openScope: OpenScope; snapshot: TurnSnapshot; seq: number; recover: TurnEvent | null },
): RunningTurn {
  return runTurn(deps, {
    turnId: restored.turnId,
    sessionId: restored.sessionId,
    input: restored.input,
    openScope: restored.openScope,
    restored: { snapshot: restored.snapshot, seq: restored.seq },
    begin: async (scope) => {
      if (turnStateName(restored.snapshot) === 'awaiting-approval') {
        // The wait goes on in this engine: say so, and ask again (the first request went to an engine that is gone).
        deps.bus.publish({ type: 'session.status', sessionId: restored.sessionId, status: { type: 'busy', turnId: restored.turnId, state: 'awaiting-approval' } })
        publishApprovalRequest(deps.bus, scope, restored.snapshot.context.pendingApprovals)
      }
      return restored.recover
    },
  })
}

/** Starts a turn whose prompt was stored but whose first transition was not (recovery). */
export function startTurnFromIdle(deps: TurnDeps, t: { turnId: string; sessionId: string; input: TurnInput; openScope: OpenScope }): RunningTurn {
  return runTurn(deps, { ...t, begin: async () => ({ type: 'turn.start' }) })
}

function runTurn(deps: TurnDeps, start: TurnStart): RunningTurn {
  const { config, bus } = deps
  const { turnId, sessionId, input } = start
  let actor!: Actor<TurnMachine>
  let settled = false
  const settle = () => {
    if (settled) return false
    settled = true
    deps.onSettled(turn)
    return true
  }
  // (`recorder` is made below, before any part can be flushed)
  const scope = start.openScope((error) => recorder.writeFailed(error))

  // Write-ahead: each actor waits until the row that entered its state is committed. When it
  // never is (the write failed, the turn was lost or detached), the actor does nothing and the
  // turn ends through `turn.fail` or a stop.
  const never = new Promise<never>(() => undefined)
  const gate = async () => {
    if (!(await recorder.committed())) return never
  }
  const machine = turnMachine.provide({
    actors: {
      streamStep: fromCallback<TurnEvent, { turnId: string; step: number; attempt: number; waitedMs: number }>(({ input, sendBack }) => {
        const controller = new AbortController()
        void gate()
          .then(() => streamStep(scope, input, controller.signal))
          .then((event) => {
            if (!controller.signal.aborted) sendBack(event)
          })
        return () => controller.abort(new MessageAbortedError())
      }),
      runTools: fromPromise(async ({ signal }) => {
        await gate()
        return runTools(scope, signal)
      }),
      // The summary's outcome as a typed event, as the step's (summarize never rejects).
      compact: fromCallback<TurnEvent, CompactInput>(({ input, sendBack }) => {
        const controller = new AbortController()
        void gate()
          // (an overflow that may not compact enters and leaves `compacting` in one step: never start)
          .then(() => (controller.signal.aborted ? never : summarize(scope, input, controller.signal)))
          // (storing the summary threw: a failed compaction, not a stuck turn)
          .catch((error: unknown): TurnEvent => ({ type: 'compaction.failed', error: serializeError(error), retryDelayMs: null }))
          .then((event) => {
            if (!controller.signal.aborted) sendBack(event)
          })
        return () => controller.abort(new MessageAbortedError())
      }),
    },
  })

  let resolveDone!: (result: TurnResult) => void
  let rejectDone!: (error: unknown) => void
  const done = new Promise<TurnResult>((resolve, reject) => {
    resolveDone = resolve
    rejectDone = reject
  })
  // A caller that never awaits `done` must not get an unhandled rejection.
  done.catch(() => undefined)

  let startFailed = false
  const recorder = new TransitionRecorder({
    turnId,
    sessionId,
    scope,
    bus,
    fence: scope.fence,
    restored: start.restored,
    fail: (error) => actor.send({ type: 'turn.fail', error }),
    lost: (error) => {
      // Another engine runs the turn now: stop every effect here and write nothing more.
      scope.writer.seal()
      actor.stop()
      if (!settle()) return
      bus.publish({ type: 'turn.lost', sessionId, turnId, error: error.toJSON() })
      rejectDone(error)
    },
    ended: ({ error, ...result }) => {
      settle() // the session is free at once; `done` waits for the usage row
      // The turn's usage is kept on its row (reverting its messages later does not lose it).
      void recordTurnResult(scope).then((extra) => resolveDone({ ...result, ...extra, ...(error ? { error: errorFromRecord(error) } : {}) }))
    },
  })

  const inspect = (event: InspectionEvent) => {
    if (event.type === '@xstate.snapshot' && event.actorRef === actor && !startFailed) recorder.record(event.event, event.snapshot as TurnSnapshot)
    const user = config.inspect
    if (typeof user === 'function') user(event)
    else user?.next?.(event)
  }

  actor = createActor(machine, {
    input,
    inspect,
    ...(start.restored ? { snapshot: start.restored.snapshot } : {}),
    ...(config.clock ? { clock: config.clock } : {}),
  })
  // An actor error is a bug in turnchart; observe it so it cannot crash the process.
  actor.subscribe({ error: (error) => config.onSubscriberError(error) })

  let begun = false
  const turn: RunningTurn = {
    id: turnId,
    sessionId,
    actor,
    done,
    get fence() {
      return scope.fence
    },
    get begun() {
      return begun && !settled && !recorder.ending
    },
    abort(reason?: string) {
      actor.send({ type: 'turn.abort', ...(reason ? { reason } : {}) })
    },
    approve(callId: string) {
      const part = pendingApproval(callId)
      // Staged, not flushed: the decision commits in the transition's own transaction, before the tool can start.
      approveCall(part, Date.now())
      scope.writer.stage(part)
      actor.send({ type: 'tool.approved', callId })
    },
    deny(callId: string, reason?: string) {
      const part = pendingApproval(callId)
      denyCall(part, reason, Date.now())
      scope.writer.stage(part)
      actor.send({ type: 'tool.denied', callId, ...(reason ? { reason } : {}) })
    },
    async detach() {
      if (settled) return
      // Nothing more is recorded; what is queued is written, then what streamed so far.
      recorder.detach()
      actor.stop()
      await scope.writer.flush().catch(() => undefined)
      await recorder.settled()
      scope.writer.seal()
      if (settle()) rejectDone(new EngineClosedError(`run turn ${turnId}: the engine closed; the turn stays open in the database for the next engine to resume`))
    },
    lose(error: TurnOwnershipLostError) {
      if (!settled && !recorder.ending) recorder.lose(error)
    },
    recorded: () => recorder.settled(),
  }

  const pendingApproval = (callId: string): ToolPart => {
    const snapshot = actor.getSnapshot()
    const state = turnStateName(snapshot)
    if (state !== 'awaiting-approval') throw new ApprovalNotPendingError(turnId, callId, `the turn is in '${state}'`)
    if (!snapshot.context.pendingApprovals.includes(callId)) {
      throw new ApprovalNotPendingError(turnId, callId, `pending calls: ${snapshot.context.pendingApprovals.join(', ') || 'none'}`)
    }
    const part = scope.stepTools.find((p) => p.callId === callId)
    if (!part || part.state.status !== 'pending') throw new ApprovalNotPendingError(turnId, callId, 'its part is not pending')
    return part
  }

  actor.start()
  start.begin(scope, actor).then(
    (event) => {
      begun = true
      if (event) actor.send(event)
    },
    (error) => {
      startFailed = true
      scope.writer.seal()
      actor.stop()
      if (settle()) rejectDone(error)
    },
  )
  return turn
}
