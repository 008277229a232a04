/**
 * Types of the turn chart: context, events, input and output. Types only, no code,
 * so that the chart and the runtime agree on one vocabulary.
 */

/** An error as the chart carries it: the same `{ name, message, ...fields }` that is stored. */
export interface ChartError {
  name: string
  message: string
  [field: string]: unknown
}

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

export interface TurnContext {
  turnId: string
  sessionId: string
  /** Step number (1-based) of the current or last LLM call; 0 before the first. */
  step: number
  /** Attempt number (1-based) of the current step. */
  attempt: number
  /** Delay of the pending retry, read by the `retryDelay` delay. */
  retryDelayMs: number
  /** Milliseconds spent waiting for retries in the current step (or compaction). */
  waitedMs: number
  autoCompact: boolean
  maxCompactions: number
  compactions: number
  /** The finished step overflowed the context: compact after its tools ran. */
  overflowPending: boolean
  /** What follows a compaction: another step, or the end of the turn. */
  afterCompaction: 'continue' | 'complete'
  error: ChartError | null
  outcome: 'completed' | 'aborted' | 'failed' | null
  /** Tool calls of the last step still waiting for `approve`/`deny`. */
  pendingApprovals: string[]
  /** Steps the turn may make (`maxSteps`); null: no limit. */
  maxSteps: number | null
}

/** States in which a process can die with work in flight (recovery writes `turn.crashed` there). */
export type InterruptibleState = 'streaming' | 'tool-running' | 'retry-waiting' | 'compacting' | 'compaction-retry-waiting'

/** Events the runtime and its actors send to the chart. Payloads are control data only. */
export type TurnEvent =
  | { type: 'turn.start' }
  | { type: 'turn.abort'; reason?: string }
  /** Something outside the step failed the turn (a database write). */
  | { type: 'turn.fail'; error: ChartError }
  /** Written by recovery: the process running the turn died in this state. */
  | { type: 'turn.crashed' }
  /**
   * Recovery resumes the interrupted turn in the state it was in (the chart's deep history of
   * `running`). `retryDelayMs` is what was left of a retry wait at the persisted deadline.
   * (Policy `abort` sends `turn.abort`.)
   */
  | { type: 'turn.recover'; retryDelayMs: number }
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
      doomLoop?: ChartError | null
    }
  | { type: 'tool.approved'; callId: string }
  | { type: 'tool.denied'; callId: string; reason?: string }
  | {
      type: 'step.failed'
      error: ChartError
      /** The provider said the context is full. */
      overflow: boolean
      /** Set when the retry policy allows another attempt after this many ms. */
      retryDelayMs: number | null
    }
  /** The compaction actor: the summary message is stored. */
  | { type: 'compaction.finished' }
  /** The compaction actor: the summary request failed (same shape as `step.failed`, minus overflow). */
  | {
      type: 'compaction.failed'
      error: ChartError
      /** Set when the retry policy allows another attempt after this many ms. */
      retryDelayMs: number | null
    }

export interface TurnOutput {
  outcome: 'completed' | 'aborted' | 'failed'
  error: ChartError | null
}

/**
 * State names as stored (log, turn row, status events), kebab-case: the key of the chart's
 * active leaf state (`turnStateName()`).
 */
export type TurnStateName =
  | 'idle'
  | 'streaming'
  | 'tool-running'
  | 'retry-waiting'
  | 'awaiting-approval'
  | 'compacting'
  | 'compaction-retry-waiting'
  | 'interrupted'
  | 'completed'
  | 'failed'
  | 'aborted'
