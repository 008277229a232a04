/**
 * The failure protocol: one pure decision for a failed model request, whether it was a step or
 * a compaction's summary request. The error classifier and the retry policy are ports with
 * today's tables and rules as defaults; an app may replace either (`createEngine({
 * errorClassifier, retryPolicy })`).
 */
import { RetriesExhaustedError, type SerializedError } from '../core/errors'
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
}

/** The decision: try again after `delayMs`, compact (the context is full), or fail with `error`. */
export type FailureDecision =
  | { kind: 'retry'; error: SerializedError; delayMs: number }
  | { kind: 'overflow'; error: SerializedError }
  | { kind: 'fatal'; error: SerializedError }

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
 * the error is a `RetriesExhaustedError` carrying the last one.
 *
 * @example
 * decideFailure(error, { attempt: 1, waitedMs: 0 }, defaultFailurePolicies())
 * // { kind: 'retry', error: { name: 'APIError', statusCode: 429, … }, delayMs: 2000 }
 */
export function decideFailure(error: unknown, at: { attempt: number; waitedMs: number }, policies: FailurePolicies): FailureDecision {
  const classified = policies.classify(error)
  if (classified.kind === 'overflow') return { kind: 'overflow', error: classified.error }
  if (classified.kind !== 'retryable') return { kind: 'fatal', error: classified.error }
  const plan = policies.retry({ attempt: at.attempt, headers: classified.headers, waitedMs: at.waitedMs, error })
  if (plan.action === 'retry') {
    // A replaced policy may answer anything: the wait is a whole number of ms a timer can hold.
    const delayMs = Number.isFinite(plan.delayMs) && plan.delayMs > 0 ? Math.min(Math.ceil(plan.delayMs), maxTimerMs) : 0
    return { kind: 'retry', error: classified.error, delayMs }
  }
  const exhausted = new RetriesExhaustedError({ reason: plan.reason, attempts: at.attempt, lastError: classified.error })
  return { kind: 'fatal', error: exhausted.toJSON() }
}
