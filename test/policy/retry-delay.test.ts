import { InvalidOptionError } from '../../src/core/errors'
import { maxTimerMs } from '../../src/core/timer-limit'
import {
  backoffDelay,
  defaultRetryOptions,
  planRetry,
  retryDelayFromHeaders,
  validateRetryOptions,
  type RetryOptions,
} from '../../src/policy/retry-delay'

// The formula's tests start from 2 s over 8 attempts (the defaults start from 1 s over 5; their own test is below).
const twoSeconds: RetryOptions = { ...defaultRetryOptions, maxAttempts: 8, initialDelayMs: 2000 }
const noJitter: RetryOptions = { ...twoSeconds, jitter: 0 }
const now = Date.parse('Wed, 21 Oct 2015 07:28:00 GMT')

describe('retryDelayFromHeaders', () => {
  const cases: Array<[string, Record<string, string | undefined>, { delayMs: number; source: string } | undefined]> = [
    ['retry-after-ms', { 'retry-after-ms': '1500' }, { delayMs: 1500, source: 'retry-after-ms' }],
    ['retry-after-ms zero', { 'retry-after-ms': '0' }, { delayMs: 0, source: 'retry-after-ms' }],
    ['retry-after-ms decimal is rounded up', { 'retry-after-ms': '12.3' }, { delayMs: 13, source: 'retry-after-ms' }],
    ['retry-after-ms wins over retry-after', { 'retry-after-ms': '250', 'retry-after': '9' }, { delayMs: 250, source: 'retry-after-ms' }],
    ['retry-after seconds', { 'retry-after': '3' }, { delayMs: 3000, source: 'retry-after' }],
    ['retry-after decimal seconds', { 'retry-after': '0.5' }, { delayMs: 500, source: 'retry-after' }],
    ['retry-after with spaces', { 'retry-after': ' 7 ' }, { delayMs: 7000, source: 'retry-after' }],
    ['retry-after HTTP date', { 'retry-after': 'Wed, 21 Oct 2015 07:28:10 GMT' }, { delayMs: 10000, source: 'retry-after' }],
    ['retry-after HTTP date in the past is ignored (the backoff decides)', { 'retry-after': 'Wed, 21 Oct 2015 07:00:00 GMT' }, undefined],
    ['header names in any case', { 'Retry-After': '2' }, { delayMs: 2000, source: 'retry-after' }],
    ['invalid retry-after-ms falls through to retry-after', { 'retry-after-ms': 'soon', 'retry-after': '4' }, { delayMs: 4000, source: 'retry-after' }],
    ['negative retry-after-ms is ignored', { 'retry-after-ms': '-5' }, undefined],
    ['empty retry-after-ms is ignored', { 'retry-after-ms': '' }, undefined],
    ['Infinity is ignored', { 'retry-after-ms': 'Infinity' }, undefined],
    ['negative retry-after is ignored', { 'retry-after': '-5' }, undefined],
    ['garbage retry-after is ignored', { 'retry-after': 'later please' }, undefined],
    ['undefined values are ignored', { 'retry-after': undefined }, undefined],
    ['no headers', {}, undefined],
  ]

  it.each(cases)('%s', (_name, headers, expected) => {
    expect(retryDelayFromHeaders(headers, now)).toEqual(expected)
  })
})

describe('backoffDelay', () => {
  it('doubles from 2 s and caps at 30 s without jitter', () => {
    const delays = [1, 2, 3, 4, 5, 6, 7].map((attempt) => backoffDelay(attempt, noJitter))
    expect(delays).toEqual([2000, 4000, 8000, 16000, 30000, 30000, 30000])
  })

  it('stays finite for huge attempt numbers', () => {
    expect(backoffDelay(5000, noJitter)).toBe(30000)
  })

  it.each([
    [0, 2000],
    [0.5, 1900],
    [0.999999, 1800],
  ])('jitter 0.1 with random() = %p gives %p ms at attempt 1', (r, expected) => {
    expect(backoffDelay(1, twoSeconds, () => r)).toBe(expected)
  })

  it('jittered delays stay within [delay × (1 − jitter), delay]', () => {
    const options = { ...twoSeconds, jitter: 0.5 }
    for (let i = 0; i < 200; i++) {
      const delay = backoffDelay(3, options)
      expect(delay).toBeGreaterThanOrEqual(4000)
      expect(delay).toBeLessThanOrEqual(8000)
    }
  })

  it('clamps a random source outside [0, 1)', () => {
    expect(backoffDelay(1, twoSeconds, () => 7)).toBe(1800)
    expect(backoffDelay(1, twoSeconds, () => -1)).toBe(2000)
  })
})

describe('planRetry', () => {
  const base = { headers: {}, waitedMs: 0, options: noJitter, now }

  it.each([
    [1, 2000],
    [2, 4000],
    [3, 8000],
    [4, 16000],
    [5, 30000],
  ])('attempt %p failed → retry after %p ms (backoff)', (attempt, delayMs) => {
    expect(planRetry({ ...base, attempt })).toEqual({ action: 'retry', delayMs, source: 'backoff' })
  })

  it('uses retry-after-ms first', () => {
    expect(planRetry({ ...base, attempt: 1, headers: { 'retry-after-ms': '0' } })).toEqual({ action: 'retry', delayMs: 0, source: 'retry-after-ms' })
  })

  it('uses retry-after seconds and HTTP dates, without jitter', () => {
    const random = () => 0.9
    expect(planRetry({ ...base, options: twoSeconds, random, attempt: 1, headers: { 'retry-after': '5' } })).toEqual({
      action: 'retry',
      delayMs: 5000,
      source: 'retry-after',
    })
    expect(planRetry({ ...base, attempt: 2, headers: { 'retry-after': 'Wed, 21 Oct 2015 07:28:20 GMT' } })).toEqual({
      action: 'retry',
      delayMs: 20000,
      source: 'retry-after',
    })
  })

  it('falls back to backoff on an invalid header', () => {
    expect(planRetry({ ...base, attempt: 2, headers: { 'retry-after': 'never' } })).toEqual({ action: 'retry', delayMs: 4000, source: 'backoff' })
  })

  it('a header delay is not capped by maxDelayMs, only by maxHeaderDelayMs', () => {
    expect(planRetry({ ...base, attempt: 1, headers: { 'retry-after': '45' } })).toEqual({ action: 'retry', delayMs: 45000, source: 'retry-after' })
    expect(planRetry({ ...base, attempt: 1, headers: { 'retry-after': '60' } })).toEqual({ action: 'retry', delayMs: 60000, source: 'retry-after' })
  })

  it('gives up when the header asks for more than maxHeaderDelayMs', () => {
    expect(planRetry({ ...base, attempt: 1, headers: { 'retry-after': '3600' } })).toEqual({
      action: 'give-up',
      reason: 'header-delay-too-long',
      delayMs: 3_600_000,
    })
    expect(planRetry({ ...base, attempt: 1, headers: { 'retry-after-ms': '60001' } })).toMatchObject({ reason: 'header-delay-too-long' })
  })

  it('never plans a delay setTimeout cannot hold (2^31 − 1 ms), whatever the options allow', () => {
    const unbounded = { ...noJitter, maxDelayMs: 2 ** 40, maxHeaderDelayMs: 2 ** 40, maxTotalWaitMs: 2 ** 45, initialDelayMs: 2 ** 35 }
    expect(planRetry({ ...base, attempt: 1, options: unbounded })).toEqual({ action: 'retry', delayMs: maxTimerMs, source: 'backoff' })
    expect(planRetry({ ...base, attempt: 1, options: unbounded, headers: { 'retry-after': String(2 ** 31 / 1000 + 1) } })).toMatchObject({
      action: 'give-up',
      reason: 'header-delay-too-long',
    })
  })

  it('gives up after maxAttempts', () => {
    expect(planRetry({ ...base, attempt: 7 })).toMatchObject({ action: 'retry' })
    expect(planRetry({ ...base, attempt: 8 })).toEqual({ action: 'give-up', reason: 'max-attempts' })
    expect(planRetry({ ...base, attempt: 1, options: { ...noJitter, maxAttempts: 1 } })).toEqual({ action: 'give-up', reason: 'max-attempts' })
  })

  it('max attempts wins even when a header says retry now', () => {
    expect(planRetry({ ...base, attempt: 8, headers: { 'retry-after-ms': '0' } })).toEqual({ action: 'give-up', reason: 'max-attempts' })
  })

  it('gives up when the total wait of the step would pass maxTotalWaitMs', () => {
    const options = { ...noJitter, maxTotalWaitMs: 10000 }
    expect(planRetry({ ...base, options, attempt: 2, waitedMs: 6000 })).toEqual({ action: 'retry', delayMs: 4000, source: 'backoff' })
    expect(planRetry({ ...base, options, attempt: 3, waitedMs: 6000 })).toEqual({ action: 'give-up', reason: 'max-total-wait', delayMs: 8000 })
    expect(planRetry({ ...base, options, attempt: 1, waitedMs: 9000, headers: { 'retry-after': '2' } })).toMatchObject({ reason: 'max-total-wait' })
  })

  it('a whole default sequence never waits more than maxTotalWaitMs', () => {
    let waited = 0
    let attempt = 1
    const plans = []
    for (;;) {
      const plan = planRetry({ attempt, headers: {}, waitedMs: waited, options: defaultRetryOptions, random: () => 0 })
      plans.push(plan)
      if (plan.action === 'give-up') break
      waited += plan.delayMs
      attempt++
    }
    expect(plans.at(-1)).toEqual({ action: 'give-up', reason: 'max-attempts' })
    expect(plans).toHaveLength(5)
    // A plain 500 every time: 15 s of waiting with the defaults, then RetriesExhaustedError.
    expect(waited).toBe(1000 + 2000 + 4000 + 8000)
  })
})

describe('validateRetryOptions', () => {
  it('returns the defaults for undefined', () => {
    expect(validateRetryOptions(undefined)).toEqual(defaultRetryOptions)
  })

  it('merges given fields with the defaults', () => {
    expect(validateRetryOptions({ maxAttempts: 3, jitter: 0 })).toEqual({ ...defaultRetryOptions, maxAttempts: 3, jitter: 0 })
  })

  it('treats an explicit undefined as the default', () => {
    expect(validateRetryOptions({ maxAttempts: undefined })).toEqual(defaultRetryOptions)
  })

  it('does not share state with the defaults', () => {
    const options = validateRetryOptions({})
    options.maxAttempts = 99
    expect(defaultRetryOptions.maxAttempts).toBe(5)
  })

  const invalid: Array<[unknown, string, string]> = [
    [{ maxAttempts: 0 }, 'retry.maxAttempts', 'invalid option retry.maxAttempts: expected an integer >= 1, got 0'],
    [{ maxAttempts: 2.5 }, 'retry.maxAttempts', 'got 2.5'],
    [{ maxAttempts: '3' }, 'retry.maxAttempts', 'got "3"'],
    [{ initialDelayMs: -1 }, 'retry.initialDelayMs', 'expected a finite number of milliseconds >= 0, got -1'],
    [{ maxDelayMs: Number.NaN }, 'retry.maxDelayMs', 'got null'],
    [{ maxHeaderDelayMs: -10 }, 'retry.maxHeaderDelayMs', 'got -10'],
    [{ maxTotalWaitMs: Infinity }, 'retry.maxTotalWaitMs', 'expected a finite number of milliseconds >= 0'],
    [{ backoffFactor: 0.5 }, 'retry.backoffFactor', 'expected a finite number >= 1, got 0.5'],
    [{ jitter: 1.5 }, 'retry.jitter', 'expected a number from 0 to 1, got 1.5'],
    [{ jitter: -0.1 }, 'retry.jitter', 'got -0.1'],
    [{ maxAttempt: 3 }, 'retry.maxAttempt', 'no such option (known: maxAttempts'],
    ['8', 'retry', 'expected an object with retry settings, got "8"'],
    [[1, 2], 'retry', 'expected an object'],
  ]

  it.each(invalid)('%p → InvalidOptionError naming %s', (value, option, message) => {
    let thrown: unknown
    try {
      validateRetryOptions(value)
    } catch (error) {
      thrown = error
    }
    expect(InvalidOptionError.isInstance(thrown)).toBe(true)
    const error = thrown as InvalidOptionError
    expect(error.option).toBe(option)
    expect(error.message).toContain(`invalid option ${option}:`)
    expect(error.message).toContain(message)
  })

  it('uses the given option name as prefix', () => {
    expect(() => validateRetryOptions({ jitter: 2 }, 'engine.retry')).toThrow('invalid option engine.retry.jitter: expected a number from 0 to 1, got 2')
  })
})
