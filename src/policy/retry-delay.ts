/**
 * How long to wait before the next attempt of a failed step, or whether to give up.
 * Pure: the clock and the random source are parameters (defaulted for production use).
 */
import { maxTimerMs } from '../core/timer-limit'
import { InvalidOptionError } from '../core/errors'

export interface RetryOptions {
  /** Attempts per step, the first one included (with a list of models, per model). */
  maxAttempts: number
  /**
   * With a list of models (`model: ['primary', 'backup']`), the attempts a model but the last is
   * given in a step before the step goes on with the next (fewer when the policy gives up
   * sooner, e.g. a `retry-after` past `maxHeaderDelayMs`). Default 2.
   */
  attemptsPerModel: number
  /** Backoff delay after the first failure. */
  initialDelayMs: number
  /** Each further failure multiplies the backoff delay by this. */
  backoffFactor: number
  /** Ceiling of the backoff delay (headers are bounded by `maxHeaderDelayMs` instead). */
  maxDelayMs: number
  /** A provider asking for a longer wait than this fails the turn instead of hanging it. */
  maxHeaderDelayMs: number
  /** Total waiting per step; past it the turn fails with the last error. */
  maxTotalWaitMs: number
  /** Fraction (0..1) of the backoff delay taken off at random, so clients do not retry in lockstep. */
  jitter: number
}

/**
 * A provider that fails every attempt without saying when to come back (a plain 500) fails the
 * turn after 1 + 2 + 4 + 8 = 15 s of waiting (5 attempts): long enough to ride out a blip, short
 * enough that a user waiting on a broken provider hears about it. A provider that says how long
 * to wait (`retry-after`, a 429) is waited for, up to `maxHeaderDelayMs` each time.
 */
export const defaultRetryOptions: RetryOptions = Object.freeze({
  maxAttempts: 5,
  attemptsPerModel: 2,
  initialDelayMs: 1000,
  backoffFactor: 2,
  maxDelayMs: 30000,
  maxHeaderDelayMs: 60000,
  maxTotalWaitMs: 600000,
  jitter: 0.1,
})

export type RetryPlan =
  | { action: 'retry'; delayMs: number; source: 'retry-after-ms' | 'retry-after' | 'backoff' }
  | { action: 'give-up'; reason: 'max-attempts' | 'max-total-wait' | 'header-delay-too-long'; delayMs?: number }

/**
 * Plans what follows the failure of `attempt` (1-based): retry after a delay, or give up.
 * Header delays (`retry-after-ms`, then `retry-after`) win over backoff; they are not jittered
 * because the provider chose them, but they are bounded by `maxHeaderDelayMs`.
 *
 * @example
 * planRetry({ attempt: 1, headers: { 'retry-after': '3' }, waitedMs: 0, options: defaultRetryOptions })
 * // { action: 'retry', delayMs: 3000, source: 'retry-after' }
 * planRetry({ attempt: 5, headers: {}, waitedMs: 0, options: defaultRetryOptions })
 * // { action: 'give-up', reason: 'max-attempts' }
 */
export function planRetry(input: {
  attempt: number
  headers: Record<string, string | undefined>
  waitedMs: number
  options: RetryOptions
  now?: number
  random?: () => number
}): RetryPlan {
  const { attempt, headers, waitedMs, options } = input
  if (attempt >= options.maxAttempts) return { action: 'give-up', reason: 'max-attempts' }

  const fromHeader = retryDelayFromHeaders(headers, input.now ?? Date.now())
  let delayMs: number
  let source: 'retry-after-ms' | 'retry-after' | 'backoff'
  if (fromHeader) {
    if (fromHeader.delayMs > Math.min(options.maxHeaderDelayMs, maxTimerMs)) {
      return { action: 'give-up', reason: 'header-delay-too-long', delayMs: fromHeader.delayMs }
    }
    delayMs = fromHeader.delayMs
    source = fromHeader.source
  } else {
    delayMs = Math.min(backoffDelay(attempt, options, input.random), maxTimerMs)
    source = 'backoff'
  }

  if (waitedMs + delayMs > options.maxTotalWaitMs) return { action: 'give-up', reason: 'max-total-wait', delayMs }
  return { action: 'retry', delayMs, source }
}

/**
 * The delay a response asked for: `retry-after-ms` (milliseconds, OpenAI and Azure), else
 * `retry-after` as seconds or as an HTTP date. Invalid values, and dates that are already past,
 * are ignored. Header names are matched case-insensitively.
 *
 * @example
 * retryDelayFromHeaders({ 'retry-after-ms': '1500' }) // { delayMs: 1500, source: 'retry-after-ms' }
 * retryDelayFromHeaders({ 'retry-after': 'Wed, 21 Oct 2015 07:28:00 GMT' }, Date.parse('Wed, 21 Oct 2015 07:27:50 GMT'))
 * // { delayMs: 10000, source: 'retry-after' }
 */
export function retryDelayFromHeaders(
  headers: Record<string, string | undefined>,
  now: number = Date.now(),
): { delayMs: number; source: 'retry-after-ms' | 'retry-after' } | undefined {
  const ms = parseNumber(header(headers, 'retry-after-ms'))
  if (ms !== undefined) return { delayMs: Math.ceil(ms), source: 'retry-after-ms' }

  const retryAfter = header(headers, 'retry-after')?.trim()
  if (!retryAfter) return undefined
  const seconds = parseNumber(retryAfter)
  if (seconds !== undefined) return { delayMs: Math.ceil(seconds * 1000), source: 'retry-after' }
  // An HTTP date always has letters (day and month names); this keeps Date.parse from
  // reading things like "-5" as a year.
  if (/[a-z]/i.test(retryAfter)) {
    const date = Date.parse(retryAfter)
    // A date already past says nothing about when to come back (a skewed clock, a cached
    // answer): the backoff decides, rather than an immediate retry that hits the limit again.
    if (Number.isFinite(date) && date > now) return { delayMs: date - now, source: 'retry-after' }
  }
  return undefined
}

/**
 * Exponential backoff for the failure of `attempt`: initialDelayMs × backoffFactor^(attempt−1),
 * capped at maxDelayMs, minus up to `jitter` of it at random, rounded to whole ms.
 *
 * @example
 * backoffDelay(3, { ...defaultRetryOptions, jitter: 0 }) // 4000
 */
export function backoffDelay(attempt: number, options: RetryOptions, random: () => number = Math.random): number {
  const exponent = Math.max(0, attempt - 1)
  const raw = options.initialDelayMs * Math.pow(options.backoffFactor, exponent)
  // `raw` can be Infinity for large attempts; min() takes care of it.
  const capped = Math.min(raw, options.maxDelayMs)
  const r = Math.min(1, Math.max(0, random()))
  return Math.round(capped * (1 - options.jitter * r))
}

const integerFields = ['maxAttempts', 'attemptsPerModel'] as const
const delayFields = ['initialDelayMs', 'maxDelayMs', 'maxHeaderDelayMs', 'maxTotalWaitMs'] as const
const timerFields = ['initialDelayMs', 'maxDelayMs', 'maxHeaderDelayMs'] as const

/**
 * Merges user retry options with the defaults and checks each field. Throws an
 * `InvalidOptionError` whose `option` names the field (e.g. `retry.maxAttempts`).
 *
 * @example
 * validateRetryOptions({ maxAttempts: 3 }) // { ...defaultRetryOptions, maxAttempts: 3 }
 * validateRetryOptions({ jitter: 2 })      // throws: invalid option retry.jitter: expected a number from 0 to 1, got 2
 */
export function validateRetryOptions(partial: unknown, optionName = 'retry'): RetryOptions {
  if (partial === undefined || partial === null) return { ...defaultRetryOptions }
  if (typeof partial !== 'object' || Array.isArray(partial)) {
    throw new InvalidOptionError(optionName, partial, 'an object with retry settings')
  }
  const given = partial as Record<string, unknown>
  const known = Object.keys(defaultRetryOptions)
  for (const key of Object.keys(given)) {
    if (!known.includes(key)) {
      throw new InvalidOptionError(`${optionName}.${key}`, given[key], `no such option (known: ${known.join(', ')})`)
    }
  }
  const merged: RetryOptions = { ...defaultRetryOptions }
  for (const key of known as Array<keyof RetryOptions>) {
    // An explicit undefined means "the default", as with an absent key.
    if (given[key] !== undefined) merged[key] = given[key] as number
  }

  const fail = (key: keyof RetryOptions, expected: string): never => {
    throw new InvalidOptionError(`${optionName}.${key}`, merged[key], expected)
  }
  for (const key of integerFields) {
    if (!Number.isInteger(merged[key]) || merged[key] < 1) fail(key, 'an integer >= 1')
  }
  for (const key of delayFields) {
    if (!isFiniteNumber(merged[key]) || merged[key] < 0) fail(key, 'a finite number of milliseconds >= 0')
  }
  // Each of these becomes (or caps) a timer; maxTotalWaitMs is only a budget compared with sums.
  for (const key of timerFields) {
    if (merged[key] > maxTimerMs) fail(key, `at most ${maxTimerMs} ms (the longest delay a timer can hold)`)
  }
  if (!isFiniteNumber(merged.backoffFactor) || merged.backoffFactor < 1) fail('backoffFactor', 'a finite number >= 1')
  if (!isFiniteNumber(merged.jitter) || merged.jitter < 0 || merged.jitter > 1) fail('jitter', 'a number from 0 to 1')
  return merged
}

function header(headers: Record<string, string | undefined>, name: string): string | undefined {
  const direct = headers[name]
  if (typeof direct === 'string') return direct
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() === name && typeof value === 'string') return value
  }
  return undefined
}

/** A plain non-negative decimal ("3", "1.5"); rejects "", "-1", "1e3x", "Infinity". */
function parseNumber(value: string | undefined): number | undefined {
  if (value === undefined) return undefined
  const text = value.trim()
  if (!/^\d+(?:\.\d+)?$/.test(text)) return undefined
  const n = Number(text)
  return Number.isFinite(n) ? n : undefined
}

function isFiniteNumber(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value)
}
