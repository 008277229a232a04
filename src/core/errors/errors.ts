/**
 * Error classes of turnchart. Each has a stable `name`, the fields a caller needs,
 * a `toJSON()` that gives the JSON-serialisable record stored on an assistant message,
 * and a static `isInstance` that works across copies of the package (no `instanceof`).
 */

import { redactSecrets } from '../../security/redact-secrets'

/** The stored and published form of an error: `{ name, message, ...fields }`. */
export interface SerializedError {
  name: string
  message: string
  [field: string]: unknown
}

const marker = Symbol.for('turnchart.error')

/** Base class: every turnchart error carries a marker so `isInstance` survives bundling twice. */
export abstract class TurnchartError extends Error {
  private readonly [marker] = true
  abstract override readonly name: string

  /** True when `value` is any turnchart error. */
  static isTurnchartError(value: unknown): value is TurnchartError {
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[marker] === true
  }

  /** The record stored on a message and sent in events. */
  toJSON(): SerializedError {
    const fields: Record<string, unknown> = {}
    for (const [key, value] of Object.entries(this)) {
      if (key !== 'cause' && value !== undefined) fields[key] = value
    }
    // Credentials in any field (a provider body echoing the request headers) never leave as a record.
    return redactSecrets.value({ ...fields, name: this.name, message: this.message })
  }
}

function isNamed<T extends TurnchartError>(name: string) {
  return (value: unknown): value is T => TurnchartError.isTurnchartError(value) && value.name === name
}

/** The provider answered with an HTTP error, or the stream failed. */
export class APIError extends TurnchartError {
  readonly name = 'APIError'
  readonly statusCode?: number
  readonly isRetryable: boolean
  readonly responseHeaders?: Record<string, string>
  readonly responseBody?: string
  constructor(input: {
    message: string
    statusCode?: number
    isRetryable: boolean
    responseHeaders?: Record<string, string>
    responseBody?: string
  }) {
    super(input.message)
    this.statusCode = input.statusCode
    this.isRetryable = input.isRetryable
    this.responseHeaders = input.responseHeaders
    this.responseBody = input.responseBody
  }
  static isInstance = isNamed<APIError>('APIError')
}

/** The provider refused the credentials (HTTP 401 or 403). Never retried. */
export class ProviderAuthError extends TurnchartError {
  readonly name = 'ProviderAuthError'
  readonly statusCode?: number
  readonly responseBody?: string
  constructor(input: { message: string; statusCode?: number; responseBody?: string }) {
    super(input.message)
    this.statusCode = input.statusCode
    this.responseBody = input.responseBody
  }
  static isInstance = isNamed<ProviderAuthError>('ProviderAuthError')
}

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

/** Retries of one step were used up; `lastError` is the failure of the last attempt. */
export class RetriesExhaustedError extends TurnchartError {
  readonly name = 'RetriesExhaustedError'
  readonly reason: 'max-attempts' | 'max-total-wait' | 'header-delay-too-long'
  readonly attempts: number
  readonly lastError: SerializedError
  constructor(input: { reason: RetriesExhaustedError['reason']; attempts: number; lastError: SerializedError; message?: string }) {
    super(input.message ?? retriesExhaustedMessage(input.reason, input.attempts, input.lastError))
    this.reason = input.reason
    this.attempts = input.attempts
    this.lastError = input.lastError
  }
  static isInstance = isNamed<RetriesExhaustedError>('RetriesExhaustedError')
}

function retriesExhaustedMessage(reason: RetriesExhaustedError['reason'], attempts: number, last: SerializedError): string {
  const why =
    reason === 'max-attempts'
      ? `retries exhausted after ${attempts} attempts`
      : reason === 'max-total-wait'
        ? `retries exhausted: the total wait of the step would exceed retry.maxTotalWaitMs after ${attempts} attempts`
        : `the provider asked to wait longer than retry.maxHeaderDelayMs after ${attempts} attempts`
  return `${why}; last error: ${last.message}`
}

/** The model stream sent nothing for longer than `streamIdleTimeoutMs`. Retryable. */
export class StreamIdleTimeoutError extends TurnchartError {
  readonly name = 'StreamIdleTimeoutError'
  readonly idleMs: number
  constructor(idleMs: number) {
    super(`the model stream sent nothing for ${idleMs} ms`)
    this.idleMs = idleMs
  }
  static isInstance = isNamed<StreamIdleTimeoutError>('StreamIdleTimeoutError')
}

/** Anything that is not one of the above. */
export class UnknownError extends TurnchartError {
  readonly name = 'UnknownError'
  constructor(message: string) {
    super(message)
  }
  static isInstance = isNamed<UnknownError>('UnknownError')
}

/** An option of `createEngine` (or of a call) is invalid; `option` names it. */
export class InvalidOptionError extends TurnchartError {
  readonly name = 'InvalidOptionError'
  readonly option: string
  readonly value: unknown
  constructor(option: string, value: unknown, expected: string) {
    super(`invalid option ${option}: expected ${expected}, got ${describe(value)}`)
    this.option = option
    this.value = describe(value)
  }
  static isInstance = isNamed<InvalidOptionError>('InvalidOptionError')
}

/** `prompt` on a session that already runs a turn. */
export class SessionBusyError extends TurnchartError {
  readonly name = 'SessionBusyError'
  readonly sessionId: string
  readonly turnId: string
  constructor(sessionId: string, turnId: string) {
    super(`session ${sessionId} is busy with turn ${turnId}; wait for turn.done or abort it first`)
    this.sessionId = sessionId
    this.turnId = turnId
  }
  static isInstance = isNamed<SessionBusyError>('SessionBusyError')
}

/** A session id that the database does not hold. */
export class SessionNotFoundError extends TurnchartError {
  readonly name = 'SessionNotFoundError'
  readonly sessionId: string
  constructor(sessionId: string) {
    super(`session ${JSON.stringify(sessionId)} does not exist`)
    this.sessionId = sessionId
  }
  static isInstance = isNamed<SessionNotFoundError>('SessionNotFoundError')
}

/** A turn id that the database does not hold (`transitions`, `replay`). */
export class TurnNotFoundError extends TurnchartError {
  readonly name = 'TurnNotFoundError'
  readonly turnId: string
  constructor(turnId: string) {
    super(`turn ${JSON.stringify(turnId)} does not exist`)
    this.turnId = turnId
  }
  static isInstance = isNamed<TurnNotFoundError>('TurnNotFoundError')
}

/** A call on an engine after `close()`. */
export class EngineClosedError extends TurnchartError {
  readonly name = 'EngineClosedError'
  constructor(operation: string) {
    super(`engine is closed; cannot ${operation}`)
  }
  static isInstance = isNamed<EngineClosedError>('EngineClosedError')
}

/** A database operation failed; `operation` says which. */
export class StorageError extends TurnchartError {
  readonly name = 'StorageError'
  readonly operation: string
  constructor(operation: string, cause: unknown) {
    super(`storage failed during ${operation}: ${cause instanceof Error ? cause.message : String(cause)}`, { cause })
    this.operation = operation
  }
  static isInstance = isNamed<StorageError>('StorageError')
}

/**
 * A database that does not hold turnchart's tables (or holds them at a schema version this
 * turnchart cannot read without migrating). Raised by the read-only CLI, which never migrates.
 */
export class NotATurnchartDatabaseError extends TurnchartError {
  readonly name = 'NotATurnchartDatabaseError'
  readonly database: string
  readonly reason: string
  constructor(database: string, reason: string) {
    super(`${database} is not a turnchart database: ${reason}`)
    this.database = database
    this.reason = reason
  }
  static isInstance = isNamed<NotATurnchartDatabaseError>('NotATurnchartDatabaseError')
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

/** Turns any thrown value into the stored `{ name, message, ...fields }` form. */
export function serializeError(error: unknown): SerializedError {
  if (TurnchartError.isTurnchartError(error)) return error.toJSON()
  return new UnknownError(safeMessage(error)).toJSON()
}

/**
 * The message of any thrown value, never throwing itself: a Proxy, a revoked Proxy or an
 * Error whose `message` getter throws still gives a string.
 *
 * @example
 * safeMessage(new Error('boom')) // 'boom'
 * safeMessage(42) // '42'
 */
export function safeMessage(error: unknown): string {
  try {
    if (typeof error === 'string') return error
    if (error instanceof Error) {
      const message = error.message
      if (typeof message === 'string' && message) return message
      const name = error.name
      return typeof name === 'string' && name ? name : 'Error'
    }
    return describe(error)
  } catch {
    return `a value that cannot be read (${safeTypeOf(error)})`
  }
}

function safeTypeOf(value: unknown): string {
  try {
    if (value === null) return 'null'
    if (typeof value !== 'object') return typeof value
    return Array.isArray(value) ? 'array' : 'object'
  } catch {
    return 'object' // Array.isArray throws on a revoked Proxy
  }
}

function describe(value: unknown): string {
  if (value === undefined) return 'undefined'
  if (typeof value === 'function') return 'a function'
  if (typeof value === 'bigint') return `${value}n`
  if (typeof value === 'symbol') return value.toString()
  try {
    const text = JSON.stringify(value)
    if (text === undefined) return String(value)
    return text.length > 200 ? text.slice(0, 200) + '…' : text
  } catch {
    try {
      return String(value)
    } catch {
      return `a value that cannot be shown (${safeTypeOf(value)})`
    }
  }
}

/** A bad argument to an engine method; `argument` names it. */
export class InvalidArgumentError extends TurnchartError {
  readonly name = 'InvalidArgumentError'
  readonly argument: string
  readonly value: unknown
  constructor(argument: string, value: unknown, expected: string) {
    super(`invalid argument ${argument}: expected ${expected}, got ${describe(value)}`)
    this.argument = argument
    this.value = describe(value)
  }
  static isInstance = isNamed<InvalidArgumentError>('InvalidArgumentError')
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

/** `approve`/`deny` of a call that is not waiting for approval. */
export class ApprovalNotPendingError extends TurnchartError {
  readonly name = 'ApprovalNotPendingError'
  readonly turnId: string
  readonly callId: string
  constructor(turnId: string, callId: string, why: string) {
    super(`tool call ${callId} of turn ${turnId} is not waiting for approval: ${why}`)
    this.turnId = turnId
    this.callId = callId
  }
  static isInstance = isNamed<ApprovalNotPendingError>('ApprovalNotPendingError')
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

/** A file or image given to `prompt` as bytes is larger than `maxFileBytes`. */
export class FileTooLargeError extends TurnchartError {
  readonly name = 'FileTooLargeError'
  readonly bytes: number
  readonly limit: number
  readonly mediaType: string | undefined
  constructor(bytes: number, limit: number, mediaType: string | undefined) {
    super(`a prompt file of ${bytes} bytes${mediaType ? ` (${mediaType})` : ''} is larger than maxFileBytes (${limit}); pass a URL instead, or raise maxFileBytes`)
    this.bytes = bytes
    this.limit = limit
    this.mediaType = mediaType
  }
  static isInstance = isNamed<FileTooLargeError>('FileTooLargeError')
}

/** A message id that is not in the session (revert, fork). */
export class MessageNotFoundError extends TurnchartError {
  readonly name = 'MessageNotFoundError'
  readonly sessionId: string
  readonly messageId: string
  constructor(sessionId: string, messageId: string) {
    super(`session ${sessionId} has no visible message ${messageId}`)
    this.sessionId = sessionId
    this.messageId = messageId
  }
  static isInstance = isNamed<MessageNotFoundError>('MessageNotFoundError')
}

/** A queued prompt was cancelled (`cancel()`, `engine.cancelQueued`, or its session deleted) before its turn started. */
export class QueuedPromptCancelledError extends TurnchartError {
  readonly name = 'QueuedPromptCancelledError'
  readonly sessionId: string
  readonly turnId: string
  constructor(sessionId: string, turnId: string) {
    super(`the queued prompt ${turnId} of session ${sessionId} was cancelled before it started`)
    this.sessionId = sessionId
    this.turnId = turnId
  }
  static isInstance = isNamed<QueuedPromptCancelledError>('QueuedPromptCancelledError')
}
