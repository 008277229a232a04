/**
 * The bus: typed events to subscribers. Delivery is synchronous and in order; a subscriber
 * that throws (or returns a promise that rejects) does not stop the engine or the other
 * subscribers, and is reported once.
 */
import type { SerializedError } from './errors'
import { callHook, settleHook } from './hooks'
import type { MessageInfo, Part, SessionStatus, ToolPart, WaitingCall } from './types'

export type TurnchartEvent = TurnchartEventBody & ChildTurnFields

/**
 * Run trees: every event a child turn publishes carries its own turn id (`turnId`, also on the
 * events that have none otherwise: `session.status`, `message.updated`, `part.updated`) and its
 * parent's (`parentTurnId`). A root turn's events have no `parentTurnId`.
 */
export interface ChildTurnFields {
  turnId?: string
  parentTurnId?: string
}

/** What `child.progress` says of a child turn. */
export interface ChildProgress {
  turnId: string
  sessionId: string
  state: string
  text?: string
  /** Calls it or a turn below it waits on a decision for, each with its turn and the waiting state that turn is in. */
  approvals?: Array<{ callId: string; tool: string; input: unknown; turnId: string; state: string }>
  part?: ToolPart
}

/** Which message of its turn a part belongs to: the prompt, a message steered in, the model's answer, a compaction summary. */
export type PartOrigin = 'prompt' | 'steer' | 'answer' | 'summary'

/** Where a tool call is: its input streams (`pending`), it waits for a decision (`approval`), it runs, it ended. */
export type ToolStage = 'pending' | 'approval' | 'running' | 'in-doubt' | 'deferred' | 'completed' | 'error'

/**
 * What a `part.updated` says changed, so that a reader needs no memory of what it was told:
 * `open` a new part (one replayed to a late reader, or restored, carries its text and state so
 * far: a text part with `time.end` is closed too); `close` a text or reasoning part ended;
 * `stage` a tool call moved to a new stage (`from`: the one before); `update` anything else
 * (provider metadata, a time), which changes nothing a stream shows.
 */
export type PartChange = 'open' | 'close' | 'stage' | 'update'

/** What a `message.updated` says changed: `open` a new message, `usage` its tokens, `update` anything else. */
export type MessageChange = 'open' | 'usage' | 'update'

type TurnchartEventBody =
  | { type: 'session.status'; sessionId: string; status: SessionStatus }
  | { type: 'message.updated'; sessionId: string; info: MessageInfo; origin: PartOrigin; change: MessageChange }
  | { type: 'part.updated'; sessionId: string; part: Part; origin: PartOrigin; change: PartChange; from?: ToolStage }
  /**
   * Text streamed into a part: `delta` is appended to the part's `field` (`text`). `partType`
   * says which part it extends: the answer (`text`) or the model's reasoning (`reasoning`).
   */
  | { type: 'part.delta'; sessionId: string; turnId: string; messageId: string; partId: string; partType: 'text' | 'reasoning'; field: 'text'; delta: string }
  | { type: 'session.error'; sessionId: string; turnId: string; error: SerializedError }
  /** `expiresAt`: when the call's approval expires (`approvalTimeoutMs`), a denial the model sees. */
  | { type: 'approval.requested'; sessionId: string; turnId: string; calls: Array<{ callId: string; tool: string; input: unknown; expiresAt?: number }> }
  /** The turn waits for these calls (in doubt, deferred): `engine.resolveCall` settles each. */
  | { type: 'calls.waiting'; sessionId: string; turnId: string; calls: WaitingCall[] }
  /** The turn waits in `throttled`: its step's request would pass its model's rate limit (`rateLimits`) before `until`. */
  | { type: 'turn.throttled'; sessionId: string; turnId: string; until: number }
  /** `output`: structured output's parsed object, on the step gate's `gate.complete` that ends a turn with `output` (as its log row stores it). */
  | { type: 'turn.transition'; sessionId: string; turnId: string; seq: number; from: string; event: string; to: string; time: number; output?: unknown }
  /** This engine lost the turn to another engine (fencing): it stopped here; the other engine goes on. */
  | { type: 'turn.lost'; sessionId: string; turnId: string; error: SerializedError }
  /**
   * The turn stalled here: alive but not moving, its work (`waitingOn`, in `state`) silent since
   * `since` past its bound (`boundMs`: a model stream's idle timeout, its tools' timeouts, a
   * retry's delay, `storage.outageMs`) and a margin. This engine stopped it and let its lease go:
   * recovery (here or on another engine) resumes it from its rows. Not a failure.
   */
  | { type: 'turn.stalled'; sessionId: string; turnId: string; state: string; waitingOn: string; since: number; boundMs: number }
  /**
   * Fallback models: the provider failed the model `from` in step `step` (`reason`, the error's
   * name and message), so the step goes on with the turn's next model, `to`. Published with the
   * `step.failed` row that says so.
   */
  | { type: 'model.fallback'; sessionId: string; turnId: string; step: number; from: string; to: string; reason: string }
  /**
   * A model's circuit (`circuitBreaker`) opened (`openUntil`: until when no engine asks it) or
   * closed (its probe was answered), changed by a step of this turn on this engine.
   */
  | { type: 'model.circuit'; sessionId: string; turnId: string; model: string; state: 'closed' | 'open' | 'half-open'; failures: number; openUntil?: number }
  /**
   * Run trees: a child turn of `turnId` (started by its call `callId`, running in this engine)
   * moved. `child.state`: its chart's state; `text`: a text part it finished; `approvals`: calls
   * it (or a turn below it) waits on a decision for, each with that turn's id; `part`: the end of
   * such a call. The parent's UI message stream shows them in the call's tool part.
   */
  | { type: 'child.progress'; sessionId: string; turnId: string; callId: string; child: ChildProgress }
  /**
   * A write of the turn failed for a reason that passes (the database restarting, busy, full):
   * the turn waits at it and tries it again (`storage.outageMs`); `operation` names the write,
   * `since` when the wait began, `error` the failure.
   */
  | { type: 'storage.waiting'; sessionId: string; turnId: string; operation: string; since: number; error: SerializedError }
  /** That write went through after `waitedMs`, or the turn gave up on it (`gaveUp`: the outage outlasted `storage.outageMs`). */
  | { type: 'storage.resumed'; sessionId: string; turnId: string; operation: string; waitedMs: number; gaveUp: boolean }
  /** A prompt was queued (`whenBusy: 'enqueue'`) or a message steered (`kind: 'steer'`), and stored; `id` is its turn's to be. */
  | { type: 'prompt.queued'; sessionId: string; id: string; kind: 'prompt' | 'steer' }
  /** A schedule's occurrence (`occurrence`, epoch ms) queued its turn (`turnId`) on its session: claimed by this engine, once in the fleet. */
  | { type: 'schedule.fired'; sessionId: string; scheduleId: string; turnId: string; occurrence: number }
  /** Occurrences of a schedule passed without a turn (its engines were down; `catchUp` left them): `missed` of them, the latest at `latest`. */
  | { type: 'schedule.missed'; sessionId: string; scheduleId: string; missed: number; latest: number }
  /** A schedule was stored, resumed or moved on: its next occurrence (null: none). An engine arms its deadline timer for it. */
  | { type: 'schedule.updated'; sessionId: string; scheduleId: string; next: number | null }

export type TurnchartEventType = TurnchartEvent['type']
/** A subscriber. It may be `async`: a rejection of its promise is reported like a throw. */
export type Listener = (event: TurnchartEvent) => void

export class Bus {
  private listeners = new Set<Listener>()
  private reported = new WeakSet<Listener>()

  constructor(private readonly onListenerError: (error: unknown) => void) {}

  /**
   * Adds a listener; returns the function that removes it.
   *
   * @example
   * const off = bus.subscribe((e) => { if (e.type === 'part.delta' && e.partType === 'text') process.stdout.write(e.delta) })
   */
  subscribe(listener: Listener): () => void {
    this.listeners.add(listener)
    return () => {
      this.listeners.delete(listener)
    }
  }

  publish(event: TurnchartEvent): void {
    for (const listener of this.listeners) {
      // A throw, or the rejection of the promise an async listener returns: reported once per
      // listener, and delivery goes on. (Inline, not `callHook`: this runs for every delta.)
      let result: unknown
      try {
        result = listener(event)
      } catch (error) {
        this.report(listener, error)
        continue
      }
      if (result !== undefined) settleHook(result, (error) => this.report(listener, error))
    }
  }

  private report(listener: Listener, error: unknown): void {
    if (this.reported.has(listener)) return
    this.reported.add(listener)
    callHook(() => this.onListenerError(error), () => undefined)
  }
}
