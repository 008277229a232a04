/**
 * The provider error cases of opencode's own tests (anomalyco/opencode,
 * packages/opencode/test/session/retry.test.ts and its provider error tests), each named after
 * the opencode case it mirrors and held against turnchart's policy (src/policy/). opencode's
 * wrappers differ (a `NamedError` whose message is the provider's text, `SessionRetry.delay`):
 * here the same provider answer goes through turnchart's own entry points, `classifyError` and
 * `planRetry`, as an AI SDK `APICallError`, a mid-stream error object or a plain message.
 *
 * The last block holds the cases where opencode and turnchart's behaviour contract disagree; the
 * contract wins (docs/behaviour.md, "Where opencode differs").
 */
import { APICallError } from 'ai'
import { classifyError } from '../../src/policy/classify-error'
import { decideFailure, defaultFailurePolicies } from '../../src/policy/decide-failure'
import { defaultRetryOptions, planRetry } from '../../src/policy/retry-delay'

const noJitter = { ...defaultRetryOptions, maxAttempts: 8, initialDelayMs: 2000, jitter: 0 }

function apiError(statusCode: number | undefined, body: unknown, message = 'provider error'): APICallError {
  return new APICallError({
    message,
    url: 'https://api.example.test/v1/chat/completions',
    requestBodyValues: {},
    statusCode,
    responseBody: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    isRetryable: false,
  })
}

/** opencode's `wrap(message)`: an error whose only evidence is the provider's message text. */
const wrap = (message: string) => ({ error: { message } })

describe('opencode session.retry.delay', () => {
  test('ignores past date retry hints', () => {
    const past = new Date(Date.now() - 5000).toUTCString()
    expect(planRetry({ attempt: 1, headers: { 'retry-after': past }, waitedMs: 0, options: noJitter })).toEqual({ action: 'retry', delayMs: 2000, source: 'backoff' })
    // Through the failure decision, as a step sees it: a 429 with that header waits the backoff.
    const decision = decideFailure(apiError(429, { error: { message: 'slow down' } }), { attempt: 1, waitedMs: 0 }, defaultFailurePolicies(noJitter))
    expect(decision).toMatchObject({ kind: 'retry', delayMs: 2000 })
  })
})

describe('opencode session.retry.retryable', () => {
  test('retries plain text rate limit errors from Alibaba', () => {
    const msg =
      'Upstream error from Alibaba: Request rate increased too quickly. To ensure system stability, please adjust your client logic to scale requests more smoothly over time.'
    expect(classifyError(wrap(msg))).toMatchObject({ kind: 'retryable', error: { message: msg } })
    // The same text as a 400 body (resellers relay it with their own status).
    expect(classifyError(apiError(400, { error: { message: msg } })).kind).toBe('retryable')
  })

  test('retries wrapped rate limit stream errors after normalization', () => {
    // An explicit concurrency-limit error: with its rate-limit type, and its text alone.
    const message = 'Concurrency limit exceeded for user, please retry later'
    expect(classifyError({ error: { type: 'rate_limit_error', message } })).toMatchObject({ kind: 'retryable', error: { message } })
    expect(classifyError(wrap(message)).kind).toBe('retryable')
    expect(classifyError(apiError(400, { error: { message: 'You have reached your concurrency limit' } })).kind).toBe('retryable')
  })

  test('does not retry text that merely mentions a concurrency limit', () => {
    const mentions = apiError(400, { error: { message: 'Invalid value for max_parallel: the concurrency limit must be between 1 and 8', type: 'invalid_request_error' } })
    expect(classifyError(mentions)).toMatchObject({ kind: 'fatal', error: { name: 'APIError', isRetryable: false } })
    expect(classifyError(wrap('Your plan has a concurrency limit of 4 requests')).kind).toBe('fatal')
  })

  test.each(['Provider returned error', 'provider-returned-error', 'try your request again', 'upstream returned status 524'])(
    'retries matching API error text: %s',
    (message) => {
      expect(classifyError(wrap(message))).toMatchObject({ kind: 'retryable', error: { message } })
    },
  )

  test('retries stream_read_error nested error envelopes', () => {
    const envelope = { type: 'error', error: { type: 'stream_read_error', message: 'Failed to read stream' } }
    expect(classifyError(envelope)).toMatchObject({ kind: 'retryable', error: { name: 'APIError', message: 'Failed to read stream', isRetryable: true } })
  })

  test('matches retryable API response bodies', () => {
    const error = apiError(400, { error: { message: 'upstream connection refused' } }, 'Request failed')
    expect(classifyError(error)).toMatchObject({ kind: 'retryable', error: { name: 'APIError', statusCode: 400, isRetryable: true } })
  })
})

describe('opencode context overflow: the OpenAI SDK text of a body-less 400 or 413 (Cerebras)', () => {
  test.each(['400 status code (no body)', '413 status code (no body)'])('%s is a context overflow', (message) => {
    expect(classifyError(wrap(message))).toMatchObject({ kind: 'overflow', error: { name: 'ContextOverflowError' } })
    expect(classifyError(new Error(message)).kind).toBe('overflow')
  })
})

describe('where opencode differs from the behaviour contract (the contract wins)', () => {
  test('uses retry-after values even when exceeding 10 minutes with headers: turnchart keeps its ceiling and gives up', () => {
    // opencode waits 50 s and 700 s. Header delays are honoured up to maxHeaderDelayMs (60 s):
    // 50 s is waited, 700 s fails the turn with a clear error instead of hanging it.
    expect(planRetry({ attempt: 1, headers: { 'retry-after': '50' }, waitedMs: 0, options: noJitter })).toEqual({ action: 'retry', delayMs: 50_000, source: 'retry-after' })
    expect(planRetry({ attempt: 1, headers: { 'retry-after-ms': '700000' }, waitedMs: 0, options: noJitter })).toEqual({
      action: 'give-up',
      reason: 'header-delay-too-long',
      delayMs: 700_000,
    })
  })

  test('caps oversized header delays to the runtime timer limit: turnchart gives up instead of waiting 24 days', () => {
    expect(planRetry({ attempt: 1, headers: { 'retry-after-ms': '999999999999' }, waitedMs: 0, options: noJitter })).toMatchObject({
      action: 'give-up',
      reason: 'header-delay-too-long',
    })
  })

  test('never retries status 403 under a configured policy: turnchart retries a 403 whose body says rate limit, and only that one', () => {
    // opencode never retries a 403, whatever its body. The contract: a 403 stays an auth error
    // unless its body says rate limit (WAFs and resellers answer rate limits with 403).
    const limited = apiError(403, { error: { message: 'Rate limit exceeded, please slow down' } }, 'Forbidden')
    expect(classifyError(limited)).toMatchObject({ kind: 'retryable', error: { name: 'APIError', statusCode: 403, isRetryable: true } })
    expect(classifyError(apiError(403, 'Too Many Requests', 'Forbidden')).kind).toBe('retryable')
    const forbidden = apiError(403, { error: { message: 'internal server error: 503 upstream', code: 'permission_denied' } }, 'Forbidden')
    expect(classifyError(forbidden)).toMatchObject({ kind: 'auth', error: { name: 'ProviderAuthError', statusCode: 403 } })
  })
})
