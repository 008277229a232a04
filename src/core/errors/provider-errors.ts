/** Errors of a model request: what the provider answered, or why no answer came. */
import { isNamed, TurnchartError, type SerializedError } from './turnchart-error'

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
  // The status says what kind of failure it was (a 500, a 503, a 429) before its text does.
  const status = typeof last.statusCode === 'number' ? ` (HTTP ${last.statusCode})` : ''
  return `${why}; last error${status}: ${last.message}`
}

/**
 * The model's circuit is open (`circuitBreaker`): its provider failed often enough, on this
 * engine or another on the database, that no request is sent to it before `until` (its circuit
 * half-opens, or the probe asking it answers). The step goes on with its next model, or waits.
 */
export class CircuitOpenError extends TurnchartError {
  readonly name = 'CircuitOpenError'
  /** The model's registered name. */
  readonly model: string
  /** When the model may be asked again (epoch ms). */
  readonly until: number
  constructor(model: string, until: number) {
    super(`the circuit of model '${model}' is open until ${new Date(until).toISOString()}: its provider failed too often`)
    this.model = model
    this.until = until
  }
  static isInstance = isNamed<CircuitOpenError>('CircuitOpenError')
}

/**
 * The provider said (a `retry-after`, on this engine or another on the database) not to ask the
 * model before `until`: the request was not sent, and the step waits as if told so itself.
 */
export class ModelHeldError extends TurnchartError {
  readonly name = 'ModelHeldError'
  /** The model's registered name. */
  readonly model: string
  /** When the model may be asked again (epoch ms). */
  readonly until: number
  constructor(model: string, until: number) {
    super(`the provider of model '${model}' asked not to be asked before ${new Date(until).toISOString()}`)
    this.model = model
    this.until = until
  }
  static isInstance = isNamed<ModelHeldError>('ModelHeldError')
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

/**
 * The model stream ended with no output and no finish part (a provider that closed the
 * connection politely, a proxy that cut it). Retryable: the same request usually succeeds.
 */
export class EmptyModelStreamError extends TurnchartError {
  readonly name = 'EmptyModelStreamError'
  constructor() {
    super('No output generated. The model stream ended without a finish chunk.')
  }
  static isInstance = isNamed<EmptyModelStreamError>('EmptyModelStreamError')
}

/** Anything that is not one of the above. */
export class UnknownError extends TurnchartError {
  readonly name = 'UnknownError'
  constructor(message: string) {
    super(message)
  }
  static isInstance = isNamed<UnknownError>('UnknownError')
}
