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
