/**
 * The failure protocol: one pure decision for a failed model request, whether it was a step or
 * a compaction's summary request. The error classifier and the retry policy are ports with
 * today's tables and rules as defaults; an app may replace either (`createEngine({
 * errorClassifier, retryPolicy })`).
 */
import { CircuitOpenError, HookError, ModelHeldError, RetriesExhaustedError, type SerializedError } from '../core/errors'
import { isThenable } from '../core/hooks'
import { classifyError, type ClassifiedError } from './classify-error'
import { retryOptionsFor } from './connection-refused'
import { maxTimerMs } from '../core/timer-limit'
import { defaultRetryOptions, planRetry, type RetryOptions, type RetryPlan } from './retry-delay'

/** Sorts a thrown value into overflow, retryable, auth or fatal, with its stored record and headers. */
export type ErrorClassifier = (error: unknown) => ClassifiedError

/** What the retry policy is asked after a retryable failure of attempt `attempt` (1-based). */
export interface RetryQuestion {
  attempt: number
  /** Response headers of the failure (lower-cased keys), e.g. `retry-after`. */
  headers: Record<string, string>
  /** Milliseconds already spent waiting for retries of this step (or compaction). */
  waitedMs: number
  /** What was thrown: the default policy retries a refused connection briefly (connection-refused.ts). */
  error?: unknown
}

/** Decides whether and when to retry; `planRetry` with the engine's `retry` options by default. */
export type RetryPolicy = (question: RetryQuestion) => RetryPlan

export interface FailurePolicies {
  classify: ErrorClassifier
  retry: RetryPolicy
  /** With a list of models, the attempts a model but the last is given in a step before the next is asked (`retry.attemptsPerModel`). */
  attemptsPerModel?: number
}

/**
 * The decision: try again after `delayMs`, compact (the context is full), or fail with `error`.
 * `retryAt`: the provider said when to come back (a `retry-after`), which holds the model for
 * every engine (`circuitBreaker`).
 */
export type FailureDecision =
  | { kind: 'retry'; error: SerializedError; delayMs: number; retryAt?: number }
  | { kind: 'overflow'; error: SerializedError }
  /** `gaveUp`: the failure was the provider's (retryable), but the retry policy gave up on it. */
  | { kind: 'fatal'; error: SerializedError; gaveUp?: true; retryAt?: number }

/** Whether the decision is on a failure of the provider's (retryable, or given up on by the retry policy): what a fallback and a circuit count. */
export function isProvidersFailure(decision: FailureDecision): boolean {
  return decision.kind === 'retry' || (decision.kind === 'fatal' && decision.gaveUp === true)
}

/**
 * The default policies: turnchart's provider tables and `planRetry` with `options`.
 *
 * @example
 * const policies = defaultFailurePolicies({ ...defaultRetryOptions, maxAttempts: 3 })
 */
export function defaultFailurePolicies(options: RetryOptions = defaultRetryOptions): FailurePolicies {
  return {
    classify: classifyError,
    retry: ({ attempt, headers, waitedMs, error }) => planRetry({ attempt, headers, waitedMs, options: retryOptionsFor(error, options) }),
  }
}

/**
 * Decides what a failed attempt leads to. Retries are bounded by the policy; when it gives up,
 * the error is a `RetriesExhaustedError` carrying the last one. A classifier or a retry policy
 * that throws, or answers what it may not (a promise, a shape it does not have), fails the
 * attempt without a retry, with a `HookError` naming the option (`errorClassifier`,
 * `retryPolicy`): a broken policy must not retry for ever nor crash the turn's actor.
 *
 * @example
 * decideFailure(error, { attempt: 1, waitedMs: 0 }, defaultFailurePolicies())
 * // { kind: 'retry', error: { name: 'APIError', statusCode: 429, … }, delayMs: 2000 }
 */
export function decideFailure(error: unknown, at: { attempt: number; waitedMs: number }, policies: FailurePolicies): FailureDecision {
  let classified: ClassifiedError
  if (CircuitOpenError.isInstance(error) || ModelHeldError.isInstance(error)) return circuitWait(error, at, policies)
  try {
    classified = checkedClassification(policies.classify(error))
  } catch (thrown) {
    return { kind: 'fatal', error: hookFailure('errorClassifier', thrown) }
  }
  if (classified.kind === 'overflow') return { kind: 'overflow', error: classified.error }
  if (classified.kind !== 'retryable') return { kind: 'fatal', error: classified.error }
  let plan: RetryPlan
  try {
    plan = checkedPlan(policies.retry({ attempt: at.attempt, headers: classified.headers, waitedMs: at.waitedMs, error }))
  } catch (thrown) {
    return { kind: 'fatal', error: hookFailure('retryPolicy', thrown) }
  }
  if (plan.action === 'retry') {
    const delayMs = timerDelay(plan.delayMs)
    const told = plan.source === 'retry-after' || plan.source === 'retry-after-ms'
    return { kind: 'retry', error: classified.error, delayMs, ...(told ? { retryAt: Date.now() + delayMs } : {}) }
  }
  const exhausted = new RetriesExhaustedError({ reason: plan.reason, attempts: at.attempt, lastError: classified.error })
  const told = plan.reason === 'header-delay-too-long' && typeof plan.delayMs === 'number' && Number.isFinite(plan.delayMs)
  return { kind: 'fatal', error: exhausted.toJSON(), gaveUp: true, ...(told ? { retryAt: Date.now() + plan.delayMs! } : {}) }
}

/**
 * A request not sent, its model's circuit open or the model held: the retry policy is asked as
 * after a provider that said when to come back (`retry-after-ms`), as a first attempt (such waits
 * are bounded by the total wait and the header bound, not by the attempts sent).
 */
function circuitWait(error: CircuitOpenError | ModelHeldError, at: { waitedMs: number }, policies: FailurePolicies): FailureDecision {
  const record = error.toJSON()
  const headers = { 'retry-after-ms': String(Math.max(1, error.until - Date.now())) }
  let plan: RetryPlan
  try {
    plan = checkedPlan(policies.retry({ attempt: 1, headers, waitedMs: at.waitedMs, error }))
  } catch (thrown) {
    return { kind: 'fatal', error: hookFailure('retryPolicy', thrown) }
  }
  if (plan.action === 'retry') return { kind: 'retry', error: record, delayMs: Math.max(1, timerDelay(plan.delayMs)) }
  return { kind: 'fatal', error: new RetriesExhaustedError({ reason: plan.reason, attempts: 1, lastError: record }).toJSON(), gaveUp: true }
}

/** A replaced policy may answer anything: the wait is a whole number of ms a timer can hold. */
function timerDelay(ms: number): number {
  return Number.isFinite(ms) && ms > 0 ? Math.min(Math.ceil(ms), maxTimerMs) : 0
}

/** Thrown by the checks below: the answer itself is what is wrong. */
class WrongAnswer {
  constructor(readonly description: string) {}
}

function hookFailure(hook: 'errorClassifier' | 'retryPolicy', thrown: unknown): SerializedError {
  return thrown instanceof WrongAnswer ? new HookError(hook, thrown.description, 'answered what it may not').toJSON() : new HookError(hook, thrown).toJSON()
}

const kinds = ['overflow', 'retryable', 'auth', 'fatal']

function checkedClassification(value: unknown): ClassifiedError {
  refusePromise(value)
  const answer = value as Partial<ClassifiedError> | null
  if (typeof answer !== 'object' || answer === null || !kinds.includes(answer.kind as string)) {
    throw new WrongAnswer(`expected { kind: 'overflow' | 'retryable' | 'auth' | 'fatal', error, headers }, got ${describe(value)}`)
  }
  const record = answer.error as SerializedError | undefined
  if (typeof record !== 'object' || record === null || typeof record.name !== 'string' || typeof record.message !== 'string') {
    throw new WrongAnswer(`expected an error record { name, message } as error, got ${describe(record)}`)
  }
  const headers = typeof answer.headers === 'object' && answer.headers !== null ? answer.headers : {}
  return { kind: answer.kind as ClassifiedError['kind'], error: record, headers }
}

function checkedPlan(value: unknown): RetryPlan {
  refusePromise(value)
  const plan = value as Partial<RetryPlan> | null
  if (typeof plan === 'object' && plan !== null && (plan.action === 'retry' || plan.action === 'give-up')) return plan as RetryPlan
  throw new WrongAnswer(`expected { action: 'retry', delayMs } or { action: 'give-up', reason }, got ${describe(value)}`)
}

/** A policy is synchronous: a promise is refused, and its rejection is not left unhandled. */
function refusePromise(value: unknown): void {
  if (!isThenable(value)) return
  Promise.resolve(value).catch(() => undefined)
  throw new WrongAnswer('a promise (it must answer synchronously)')
}

function describe(value: unknown): string {
  return value === undefined ? 'undefined' : value === null ? 'null' : typeof value === 'object' ? `an object with keys ${Object.keys(value).join(', ') || '(none)'}` : typeof value
}
