/** Errors of the engine's calls: bad options or arguments, unknown ids, a busy session, the store. */
import { describeValue, safeMessage } from './serialize'
import { isNamed, TurnchartError } from './turnchart-error'

/** An option of `createEngine` (or of a call) is invalid; `option` names it. */
export class InvalidOptionError extends TurnchartError {
  readonly name = 'InvalidOptionError'
  readonly option: string
  readonly value: unknown
  constructor(option: string, value: unknown, expected: string) {
    super(`invalid option ${option}: expected ${expected}, got ${describeValue(value)}`)
    this.option = option
    this.value = describeValue(value)
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
  /** True for a turn the engine handed to another engine (`close({ handoff: true })`): it goes on there. */
  readonly handedOff: boolean
  constructor(operation: string, options: { handedOff?: boolean } = {}) {
    super(`engine is closed; cannot ${operation}`)
    this.handedOff = options.handedOff === true
  }
  static isInstance = isNamed<EngineClosedError>('EngineClosedError')
}

/**
 * A turn's handle let go of it because it was parked (`parkAfterMs`): it waits in `state` with no
 * engine holding it, and goes on when its wait is settled (`engine.approve`, `engine.deny`,
 * `engine.abort`) on whichever engine settles it. `done` of the handle rejects with this; read the
 * turn's end from the database (`engine.getTurn`, `engine.readStatus`) or the events.
 */
export class TurnParkedError extends TurnchartError {
  readonly name = 'TurnParkedError'
  readonly turnId: string
  readonly sessionId: string
  readonly state: string
  constructor(fields: { turnId: string; sessionId: string; state: string }) {
    super(`turn ${fields.turnId} is parked in '${fields.state}': no engine holds it until its wait is settled (approve, deny, abort), which resumes it wherever that happens`)
    this.turnId = fields.turnId
    this.sessionId = fields.sessionId
    this.state = fields.state
  }
  static isInstance = isNamed<TurnParkedError>('TurnParkedError')
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
 * The connection an engine listens on for PostgreSQL notifications failed (refused, dropped,
 * silent past its heartbeat). Nothing stops: the engine polls as it does without notifications,
 * reconnects with backoff, and looks once for what it missed when it is back. Reported once per
 * outage through `onSubscriberError`; `url` has no password.
 */
export class NotificationListenerError extends TurnchartError {
  readonly name = 'NotificationListenerError'
  readonly url: string
  readonly reason: string
  constructor(url: string, reason: string) {
    super(`the PostgreSQL notification listener on ${url} failed (${reason}); polling until it reconnects`)
    this.url = url
    this.reason = reason
  }
  static isInstance = isNamed<NotificationListenerError>('NotificationListenerError')
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

/** A bad argument to an engine method; `argument` names it. */
export class InvalidArgumentError extends TurnchartError {
  readonly name = 'InvalidArgumentError'
  readonly argument: string
  readonly value: unknown
  constructor(argument: string, value: unknown, expected: string) {
    super(`invalid argument ${argument}: expected ${expected}, got ${describeValue(value)}`)
    this.argument = argument
    this.value = describeValue(value)
  }
  static isInstance = isNamed<InvalidArgumentError>('InvalidArgumentError')
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

/**
 * A prompt would run past a limit of `concurrency` (the engine option): `limit` names it
 * (`perTenant`, `total`), `max` its value, `tenant` the session's. Nothing was stored; a prompt
 * queued with `whenBusy: 'enqueue'` waits for a slot instead.
 */
export class ConcurrencyLimitError extends TurnchartError {
  readonly name = 'ConcurrencyLimitError'
  readonly sessionId: string
  readonly limit: 'perTenant' | 'total'
  readonly max: number
  readonly tenant: string | null
  constructor(input: { sessionId: string; limit: 'perTenant' | 'total'; max: number; tenant: string | null }) {
    super(
      `session ${input.sessionId} cannot start a turn: ${input.limit === 'perTenant' ? `tenant ${input.tenant} runs` : 'the database runs'} ${input.max} turns, its concurrency.${input.limit} (prompt with whenBusy: 'enqueue' to wait for a slot)`,
    )
    this.sessionId = input.sessionId
    this.limit = input.limit
    this.max = input.max
    this.tenant = input.tenant
  }
  static isInstance = isNamed<ConcurrencyLimitError>('ConcurrencyLimitError')
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

/**
 * A function the app supplied (an option such as `errorClassifier` or `retryPolicy`, a tool's
 * `needsApproval`, the chat handler's `authorize`) threw, rejected, or answered something it
 * may not. `hook` names the option; the thrown value is the `cause`.
 */
export class HookError extends TurnchartError {
  readonly name = 'HookError'
  readonly hook: string
  constructor(hook: string, cause: unknown, what = 'threw') {
    super(`${hook} ${what}: ${safeMessage(cause)}`, { cause })
    this.hook = hook
  }
  static isInstance = isNamed<HookError>('HookError')
}
