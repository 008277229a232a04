/** Why a turn ended as it did, or why its log or its ownership no longer holds. */
import { isNamed, TurnchartError, type SerializedError } from './turnchart-error'

/** The history does not fit the model's context and compaction could not help. */
export class ContextOverflowError extends TurnchartError {
  readonly name = 'ContextOverflowError'
  readonly reason: 'auto-compaction-off' | 'summary-overflow' | 'compaction-limit'
  constructor(input: { message: string; reason: ContextOverflowError['reason'] }) {
    super(input.message)
    this.reason = input.reason
  }
  static isInstance = isNamed<ContextOverflowError>('ContextOverflowError')
}

/** The turn was aborted (by `abort()`, `engine.abort`, `engine.close` or stopping its actor). */
export class MessageAbortedError extends TurnchartError {
  readonly name = 'MessageAbortedError'
  constructor(message = 'The turn was aborted') {
    super(message)
  }
  static isInstance = isNamed<MessageAbortedError>('MessageAbortedError')
}

/**
 * The summary request of a compaction failed for a reason other than overflow. With
 * `retryDelayMs` the failure is retryable and the chart retries the compaction after that delay.
 */
export class CompactionFailedError extends TurnchartError {
  readonly name = 'CompactionFailedError'
  readonly lastError: SerializedError
  readonly retryDelayMs?: number
  constructor(lastError: SerializedError, retryDelayMs?: number) {
    super(`compaction failed: ${lastError.message}`)
    this.lastError = lastError
    this.retryDelayMs = retryDelayMs
  }
  static isInstance = isNamed<CompactionFailedError>('CompactionFailedError')
}

/** The model called the same tool with the same input again and again, or cycled through calls. */
export class DoomLoopError extends TurnchartError {
  readonly name = 'DoomLoopError'
  readonly kind: 'repeat' | 'cycle'
  readonly tool: string
  readonly input: unknown
  /** The calls of one period of the loop. */
  readonly calls: Array<{ tool: string; input: unknown }>
  constructor(input: { kind: 'repeat' | 'cycle'; calls: Array<{ tool: string; input: unknown }>; length: number }) {
    const first = input.calls[0]
    const shown = input.calls.map((c) => `${c.tool}(${JSON.stringify(c.input)})`).join(', ')
    super(
      input.kind === 'repeat'
        ? `doom loop: tool '${first.tool}' was called ${input.length} times in a row with the same input ${JSON.stringify(first.input)}`
        : `doom loop: the calls ${shown} repeated ${input.length / input.calls.length} times in a row`,
    )
    this.kind = input.kind
    this.tool = first.tool
    this.input = first.input
    this.calls = input.calls
  }
  static isInstance = isNamed<DoomLoopError>('DoomLoopError')
}

/** A turn reached `maxSteps` and its last step still called tools: the next step is not started. */
export class StepLimitError extends TurnchartError {
  readonly name = 'StepLimitError'
  readonly maxSteps: number
  constructor(maxSteps: number) {
    super(`the turn reached its step limit (maxSteps ${maxSteps}) while the model still called tools; the next step was not started`)
    this.maxSteps = maxSteps
  }
  static isInstance = isNamed<StepLimitError>('StepLimitError')
  /** The step limit's rule, said once (the chart before a step's calls run, the step gate before the next call): `step` steps made reach it. */
  static reachedAt(step: number, maxSteps: number | null): boolean {
    return maxSteps !== null && step >= maxSteps
  }
}

/**
 * This engine no longer owns the turn: another engine took it over (its lease ran out while
 * this one stalled) or it was released. The turn stops here at once and nothing more is written.
 */
export class TurnOwnershipLostError extends TurnchartError {
  readonly name = 'TurnOwnershipLostError'
  readonly turnId: string
  readonly owner: string
  constructor(turnId: string, owner: string, detail = 'another engine took it over') {
    super(`this engine (${owner}) no longer owns turn ${turnId}: ${detail}`)
    this.turnId = turnId
    this.owner = owner
  }
  static isInstance = isNamed<TurnOwnershipLostError>('TurnOwnershipLostError')
}

/**
 * What `turn.done` rejects with when the turn's final row could not be written (the database
 * failed at the end): whether the turn completed, failed or was aborted is not known yet. Its
 * row stays open in the database, and recovery (the next `createEngine` on that database, or
 * `engine.recover()`) ends or resumes the turn; read its outcome then (`engine.getTurn(turnId)`).
 * `cause`: the write's failure, as recorded.
 */
export class TurnOutcomeUnknownError extends TurnchartError {
  readonly name = 'TurnOutcomeUnknownError'
  readonly turnId: string
  readonly sessionId: string
  declare readonly cause: SerializedError
  constructor(input: { turnId: string; sessionId: string; cause: SerializedError }) {
    super(`the final row of turn ${input.turnId} could not be written (${input.cause.message}); the turn stays open and recovery ends or resumes it`, { cause: input.cause })
    this.turnId = input.turnId
    this.sessionId = input.sessionId
  }
  static isInstance = isNamed<TurnOutcomeUnknownError>('TurnOutcomeUnknownError')
}

/**
 * What `turn.done` rejects with when this engine found the turn stalled: alive, but not moving,
 * its work (`waitingOn`, since `since`) past its bound (`boundMs`: a model stream's idle timeout,
 * its tools' timeouts, a retry's delay, `storage.outageMs` for a write) and a margin. The engine
 * stopped it here (nothing more is written by it) and let its lease go: recovery, this engine's
 * or another's, resumes it from its rows. A stalled turn is not failed; read its outcome once
 * it ended (`engine.getTurn(turnId)`). docs/durability.md, "Stalled turns".
 */
export class TurnStalledError extends TurnchartError {
  readonly name = 'TurnStalledError'
  readonly turnId: string
  readonly sessionId: string
  /** The chart's state the turn stalled in. */
  readonly state: string
  /** What it was waiting on, in words. */
  readonly waitingOn: string
  /** Since when (epoch ms) it had not moved. */
  readonly since: number
  /** The bound its work outlived (ms). */
  readonly boundMs: number
  constructor(input: { turnId: string; sessionId: string; state: string; waitingOn: string; since: number; boundMs: number }) {
    super(`turn ${input.turnId} stalled in '${input.state}': ${input.waitingOn} did not move for longer than its bound (${input.boundMs} ms) and a margin; it was stopped here and is left for recovery`)
    this.turnId = input.turnId
    this.sessionId = input.sessionId
    this.state = input.state
    this.waitingOn = input.waitingOn
    this.since = input.since
    this.boundMs = input.boundMs
  }
  static isInstance = isNamed<TurnStalledError>('TurnStalledError')
}

/** A log row the machine would not have taken: the log is corrupted or was edited. */
export class ReplayMismatchError extends TurnchartError {
  readonly name = 'ReplayMismatchError'
  readonly turnId: string
  readonly seq: number
  readonly expected: string
  readonly logged: string
  constructor(input: { turnId: string; seq: number; expected: string; logged: string; detail: string }) {
    super(`transition log of turn ${input.turnId} disagrees with the chart at seq ${input.seq}: ${input.detail}`)
    this.turnId = input.turnId
    this.seq = input.seq
    this.expected = input.expected
    this.logged = input.logged
  }
  static isInstance = (value: unknown): value is ReplayMismatchError =>
    TurnchartError.isTurnchartError(value) && value.name === 'ReplayMismatchError'
}

/**
 * A run tree's budget was reached: the model call was not made, and the turn that would have
 * made it ended `failed` (its parent's tool call gets the error, and the parent's own next call
 * is refused the same way, so the whole tree ends `failed`). `limit` names the budget field
 * (`tokens.output`, `cost`, `steps`, `wallMs`…), `max` its value, `reached` the tree's figure,
 * `turnId` the turn whose call was refused first.
 */
export class BudgetExceededError extends TurnchartError {
  readonly name = 'BudgetExceededError'
  readonly limit: string
  readonly max: number
  readonly reached: number
  readonly turnId: string
  constructor(input: { limit: string; max: number; reached: number; turnId: string }) {
    super(`the run tree's budget is spent: ${input.limit} reached ${input.reached} (limit ${input.max}); turn ${input.turnId} made no further model call`)
    this.limit = input.limit
    this.max = input.max
    this.reached = input.reached
    this.turnId = input.turnId
  }
  static isInstance = isNamed<BudgetExceededError>('BudgetExceededError')
}

/**
 * A child turn (run trees) did not complete: the `agentTool` call that started it becomes an
 * error part with this message, and the parent's model sees it. `outcome` is how the child
 * ended, `error` its error record.
 */
export class ChildTurnError extends TurnchartError {
  readonly name = 'ChildTurnError'
  readonly turnId: string
  readonly outcome: string
  readonly error: SerializedError | undefined
  constructor(input: { turnId: string; outcome: string; error?: SerializedError }) {
    super(`the sub-agent's turn ${input.turnId} ended ${input.outcome}${input.error ? `: ${input.error.name}: ${input.error.message}` : ''}`)
    this.turnId = input.turnId
    this.outcome = input.outcome
    this.error = input.error
  }
  static isInstance = isNamed<ChildTurnError>('ChildTurnError')
}

/**
 * Structured output (`output: Output.object({ schema })`): the turn's final answer did not parse
 * or did not match the schema, after its one retry (the model was shown the reasons once and
 * answered again). `text` is the last answer, `reasons` why each answer was refused (first
 * answer first), `attempts` how many answers were checked. The AI SDK's own
 * `NoObjectGeneratedError` for the last answer is kept as its record (`aiSdkError`).
 */
export class StructuredOutputError extends TurnchartError {
  readonly name = 'StructuredOutputError'
  readonly text: string
  readonly reasons: string[]
  readonly attempts: number
  readonly aiSdkError: SerializedError | undefined
  constructor(input: { text: string; reasons: string[]; attempts: number; aiSdkError?: SerializedError }) {
    super(`the turn's final answer does not match its output schema after ${input.attempts} answer${input.attempts === 1 ? '' : 's'}: ${input.reasons.at(-1) ?? 'no reason'}`)
    this.text = input.text
    this.reasons = input.reasons
    this.attempts = input.attempts
    this.aiSdkError = input.aiSdkError
  }
  static isInstance = isNamed<StructuredOutputError>('StructuredOutputError')
}
