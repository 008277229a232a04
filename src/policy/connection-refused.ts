/**
 * A refused connection (nothing listens at the model's URL: a wrong port, a local server that
 * is down) is retried briefly, not for the minutes the full retry policy allows: three
 * attempts at most and ten seconds of waiting per step, so a misconfigured URL fails the turn
 * within seconds while a local server that is restarting still gets a second chance. Other
 * network failures (a reset, a timeout) keep the full policy.
 */
import { isErrorLike } from '../core/errors/serialize'
import type { RetryOptions } from './retry-delay'

/** The caps applied to the retry policy when the connection was refused. */
export const connectionRefusedRetry = Object.freeze({ maxAttempts: 3, maxTotalWaitMs: 10_000 })

const refusedCodes = ['ECONNREFUSED', 'ConnectionRefused']
const maxDepth = 5

/**
 * True when `error` (or a cause, or an AggregateError's member) is a refused connection and no
 * HTTP answer came back.
 *
 * @example
 * isConnectionRefused(new TypeError('fetch failed', { cause: Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' }) })) // true
 */
export function isConnectionRefused(error: unknown): boolean {
  if (typeof (error as { statusCode?: unknown } | null)?.statusCode === 'number') return false
  let current: unknown = error
  // Duck-typed, not `instanceof Error`: errors from another realm (a VM context, jest) count too.
  for (let depth = 0; depth <= maxDepth && isErrorLike(current); depth++) {
    if (refused(current)) return true
    const members = (current as { errors?: unknown }).errors
    if (Array.isArray(members) && members.slice(0, 5).some((e) => isErrorLike(e) && refused(e))) return true
    current = current.cause
  }
  return false
}

function refused(error: Error): boolean {
  const code = (error as { code?: unknown }).code
  return (typeof code === 'string' && refusedCodes.includes(code)) || /ECONNREFUSED/.test(error.message)
}

/**
 * The retry options for a retryable `error`: the configured ones, capped by
 * `connectionRefusedRetry` when the connection was refused.
 *
 * @example
 * retryOptionsFor(refusedError, config.retry).maxAttempts // min(config.retry.maxAttempts, 3)
 */
export function retryOptionsFor(error: unknown, options: RetryOptions): RetryOptions {
  if (!isConnectionRefused(error)) return options
  return {
    ...options,
    maxAttempts: Math.min(options.maxAttempts, connectionRefusedRetry.maxAttempts),
    maxTotalWaitMs: Math.min(options.maxTotalWaitMs, connectionRefusedRetry.maxTotalWaitMs),
  }
}
