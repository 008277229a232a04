/**
 * Types of the turn chart: context, events, input and output. Types only, no code,
 * so that the chart and the runtime agree on one vocabulary.
 */
import type { SerializedError } from '../src/core/errors'
import type { ApprovalReceipt } from '../src/core/types'

export interface TurnInput {
  turnId: string
  sessionId: string
  /** `compaction.auto`: false means an overflow fails the turn instead of compacting. */
  autoCompact: boolean
  /** At most this many compactions in one turn (the loop guard). */
  maxCompactions: number
  /** Steps (LLM calls) the turn may make; absent: no limit. */
  maxSteps?: number
}

/**
 * A step that goes on with the turn's next model (`model: ['primary', 'backup']`): the
 * provider failed the model it asked (an outage, overload, a timeout, a long rate-limit wait)
 * after the attempts a model is given.
 */
export interface ModelFallback {
  /** The index of the model the step goes on with, in the turn's list. */
  model: number
  /** The names of the model that failed and of the next one. */
  from: string
  to: string
  /** What failed, in words (the error's name and message). */
  reason: string
}

/** Control data only: counters and the decisions the events carried. Streamed content never lives here. */
export interface TurnContext {
  turnId: string
  sessionId: string
  /** Step number (1-based) of the current or last LLM call; 0 before the first. */
  step: number
  /** Attempt number (1-based) of the current step (or of the summary request while compacting). */
  attempt: number
  /** Delay of the pending retry, read by the `retryDelay` delay. */
  retryDelayMs: number
  /** Milliseconds spent waiting for retries in the current step (or compaction). */
  waitedMs: number
  /** Fallback models: which of the turn's models (0: the first) the turn asks; it stays on the one it fell back to. */
  model: number
  /** The attempt of the current step on which that model was first asked (its own attempts count from there). */
  modelSince: number
  autoCompact: boolean
  maxCompactions: number
  compactions: number
  error: SerializedError | null
  outcome: 'completed' | 'aborted' | 'failed' | null
  /** Tool calls of the last step still waiting for `approve`/`deny`. */
  pendingApprovals: string[]
  /** Calls of the last step whose outcome is unknown (parts `in-doubt`): `call-in-doubt` waits for `resolveCall`. */
  inDoubtCalls: string[]
  /** Calls of the last step whose result arrives later (parts `deferred`): `awaiting-deferred` waits for `resolveCall`. */
  deferredCalls: string[]
  /** Those of `deferredCalls` that settle themselves at their deadline (a tool's `sleep()`): with only these left, the turn is `sleeping`. */
  sleepingCalls: string[]
  /** The earliest stored deadline of the waiting calls (epoch ms; the turn row's `retry_at`), or null. */
  callDeadline: number | null
  /** A call in doubt was resolved with `retry`: it runs again (`awaiting-calls` → `tool-running`). */
  callRetried: boolean
  /** In `throttled`: when its model's rate limit allows the step's request (the row's deadline). */
  throttledUntil: number | null
  /** Messages steered into the turn so far (`engine.steer`), each taken before a model call. */
  steered: number
  /** Structured output: final answers sent back to the model because they did not match the schema (at most one). */
  outputRetries: number
  /** Steps the turn may make (`maxSteps`); null: no limit. */
  maxSteps: number | null
}

/**
 * A turn its engine found stalled: alive, but not moving, its work (`waitingOn`, in `state`)
 * silent since `since` past its bound (`boundMs`) and a margin.
 */
export interface TurnStall {
  /** The chart's state it stalled in. */
  state: string
  /** What it waited on, in words (a write, or its state's work: `WorkMeaning.label`). */
  waitingOn: string
  /** Since when (epoch ms) it had not moved: the write's start, or its last event. */
  since: number
  /** The bound its work outlived (ms), before the margin. */
  boundMs: number
}

/**
 * Events the runtime and its actors send to the chart. Payloads are control data only; a
 * decision that needs a clock, headers, limits or configuration is made by the actor with the
 * pure policies and carried here, so that the logged events replay to the same states.
 */
export type TurnEvent =
  | { type: 'turn.start' }
  | { type: 'turn.abort'; reason?: string }
  /** Something outside the step failed the turn: a database write, or a defect in an actor. */
  | { type: 'turn.fail'; error: SerializedError }
  /**
   * Written by recovery: the process running the turn died in this state; or, with `stalled`,
   * its engine found it stalled there (alive, not moving: src/turn/stall-watch.ts) and let it go.
   */
  | { type: 'turn.crashed'; stalled?: TurnStall }
  /**
   * Recovery resumes the interrupted turn. `restartStep`: the crash interrupted a model call,
   * so a new step starts; otherwise the turn goes back into the state it was in (the deep
   * history of `running`). `retryDelayMs` is what was left of a retry wait at the persisted
   * deadline. (Policy `abort` sends `turn.abort` instead.)
   */
  | { type: 'turn.recover'; retryDelayMs: number; restartStep?: boolean }
  | {
      type: 'step.finished'
      finishReason: string
      /** Number of tool calls the step made. */
      toolCalls: number
      /** The step's usage filled the usable context. */
      overflow: boolean
      /** Call ids that need approval before the tools run (absent: none). */
      approvals?: string[]
      /** Set when the turn's calls loop and the policy is `stop`: the DoomLoopError record. */
      doomLoop?: SerializedError | null
      /** A final answer of a turn with structured output: the step gate parses and checks it before the turn completes. */
      checksOutput?: boolean
    }
  /**
   * The step gate: messages sent to the running turn (`engine.steer`) were taken into its
   * history (stored as user messages, seen by the next model call); the gate decides again.
   */
  | { type: 'turn.steered'; messages: number }
  /** The step gate: the next model call is made. */
  | { type: 'gate.continue' }
  /**
   * The step gate: a stop rule holds (`rule`: `stopWhen`, or an app's rule's name); the turn
   * completes. `rule: 'output'`: the final answer matched the structured output's schema, and
   * `output` is the parsed object (stored in the log with this row).
   */
  | { type: 'gate.complete'; rule: string; output?: unknown }
  /**
   * The step gate: the final answer did not match the structured output's schema (`reason`);
   * a user message saying why joined the history and the model answers again (once).
   */
  | { type: 'output.retry'; reason: string }
  /** The step gate: a rule fails the turn (`rule`: `maxSteps`, or an app's rule's name) with `error`. */
  | { type: 'gate.fail'; rule: string; error: SerializedError }
  /** The step gate: the run tree's budget is spent (`BudgetExceededError`); no call is made. */
  | { type: 'budget.exceeded'; error: SerializedError }
  /** A decision on a waiting call; `receipt` (logged with it: receipts survive a revert) says who, when and the input's digest. */
  | { type: 'tool.approved'; callId: string; receipt?: ApprovalReceipt & { tool: string } }
  /** A denial, or an approval that expired (`receipt.decision: 'expired'`), which the model sees as a denial. */
  /**
   * Some calls of the step wait (in doubt, deferred); the others have their results. `deadline`:
   * the earliest stored deadline among them (a deferred call's `timeoutMs`), or null.
   */
  | { type: 'tools.waiting'; inDoubt: string[]; deferred: string[]; deadline: number | null; sleeping?: string[] }
  /**
   * A waiting call was settled (`engine.resolveCall`, its deadline, a reconcile): `how` says
   * how (`retry`: it runs again, in `tool-running`, with the same key). `deadline`: the earliest
   * deadline of the calls still waiting.
   */
  | { type: 'call.resolved'; callId: string; how: 'output' | 'error' | 'retry' | 'expired'; deadline: number | null }
  | { type: 'tool.denied'; callId: string; reason?: string; receipt?: ApprovalReceipt & { tool: string } }
  | {
      type: 'step.failed'
      error: SerializedError
      /** The provider said the context is full. */
      overflow: boolean
      /** Set when the retry policy allows another attempt after this many ms. */
      retryDelayMs: number | null
      /** The step goes on with the turn's next model (`retryDelayMs` is then 0): which, and why. */
      fallback?: ModelFallback
    }
  /**
   * The step's tool calls have run. `overflow`: the step's usage filled the usable context, so
   * the history is compacted before the step gate. (`stop`: written by turnchart before the
   * step gate, when `stopWhen` held; replayed as the gate's `gate.complete`.)
   */
  | { type: 'tools.finished'; overflow: boolean; stop?: boolean }
  /** The step's request would pass its model's rate limit (`rateLimits`): not sent; it may be at `until`. */
  | { type: 'step.throttled'; model: string; until: number }
  /** A throttled turn's time came (whichever engine sweeps past its deadline): the step asks again. */
  | { type: 'throttle.lifted' }
  /** The compaction actor: the summary message is stored. `completes`: it followed a final answer, so the turn ends. */
  | { type: 'compaction.finished'; completes: boolean }
  /** The compaction actor: the summary request failed (same shape as `step.failed`, minus overflow). */
  | {
      type: 'compaction.failed'
      error: SerializedError
      /** Set when the retry policy allows another attempt after this many ms. */
      retryDelayMs: number | null
    }

export interface TurnOutput {
  outcome: 'completed' | 'aborted' | 'failed'
  error: SerializedError | null
}

/**
 * State names as stored (log, turn row, status events), kebab-case: the key of the chart's
 * active leaf state (`turnStateName()`).
 */
export type TurnStateName =
  | 'idle'
  | 'step-gate'
  | 'streaming'
  | 'tool-running'
  | 'retry-waiting'
  | WaitingStateName
  | 'compacting'
  | 'compaction-retry-waiting'
  | 'interrupted'
  | 'completed'
  | 'failed'
  | 'aborted'

/** The states where a turn waits on a person or the world (each has a `WaitMeaning` as its `meta.wait`). */
export type WaitingStateName = 'awaiting-approval' | 'call-in-doubt' | 'awaiting-deferred' | 'sleeping' | 'throttled'

/**
 * What a waiting state means to the rest of the code, said once, on the state in the chart
 * (`meta: { wait }`), and read by recovery, the turn log, the status reader, the UI chunks, the
 * deadline sweep, parking and the viewer (`waitOf` in turn.machine.ts): none of them names a
 * waiting state. A waiting state is left only by the events in `settledBy` (or an abort); its
 * turn resumes there after a crash or a close, as it is (nothing was in flight).
 */
export interface WaitMeaning {
  /**
   * What settles the turn's waiting calls, and so what the turn announces and lists while it
   * waits: `decision`, a person approves or denies each pending call (`approval.requested`, the
   * status's `approvals`; an approval past its `expiresAt` is a denial); `result`, each call's
   * result arrives (`engine.resolveCall`; `calls.waiting`, the status's `calls`; a call past its
   * deadline is an error the model sees); `time`, a time passes (the model's rate limit allows the
   * request then: `context.throttledUntil`, the row's deadline), and nothing is listed but the turn.
   */
  awaits: 'decision' | 'result' | 'time'
  /** The events that settle the wait, each a logged transition of the waiting turn. */
  settledBy: ReadonlyArray<TurnEvent['type']>
  /** Nothing of the turn's own is in flight (no request, tool or timer of the chart's): its engine may park it after `parkAfterMs`. */
  parks: boolean
  /**
   * A UI message stream of the turn ends at this wait, with this finish reason (the page settles
   * the wait, then follows the turn again); absent: the stream follows the turn through it (the
   * wait ends by itself, nobody on the page settles it).
   */
  uiFinish?: 'tool-calls' | 'stop'
  /** What the turn waits for, as the viewer and the CLI say it. */
  label: string
}

/**
 * What bounds the work of a state where the turn works (not waits), said on the state in the
 * chart (`meta: { work }`) and read through `workOf`: the engine renews a turn's lease only while
 * the turn moves or its work is within this bound (plus a margin), and otherwise declares it
 * stalled (`turn.stalled`) and lets it go for recovery (docs/durability.md, "Stalled turns").
 */
export interface WorkMeaning {
  /**
   * What bounds the work, and so the longest a turn may go without moving there: `model`, the
   * model stream's idle timeout (`streamIdleTimeoutMs`: a request that stays silent fails);
   * `tools`, the longest timeout of the step's calls (each tool's `timeoutMs`, else
   * `toolExecution.timeoutMs`); `retry-delay`, the wait's own delay; `storage`, the state only
   * reads and writes the database, bounded by `storage.outageMs`.
   */
  boundBy: 'model' | 'tools' | 'retry-delay' | 'storage'
  /** What the turn waits on there, in words (`turn.stalled`'s `waitingOn`). */
  label: string
  /** A retry's delay: what the attempt it waits for is called (the viewer's "attempt 3 in 1.4 s"). */
  attempt?: string
}
