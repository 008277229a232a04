/**
 * The failure protocol: classification and retry policy in, one decision out.
 */
import { APICallError } from 'ai'
import { decideFailure, defaultFailurePolicies, type FailurePolicies } from '../../src/policy/decide-failure'
import { defaultRetryOptions } from '../../src/policy/retry-delay'

const apiError = (statusCode: number, responseBody: string, responseHeaders: Record<string, string> = {}) =>
  new APICallError({ message: `HTTP ${statusCode}`, url: 'http://127.0.0.1/v1/chat/completions', requestBodyValues: {}, statusCode, responseHeaders, responseBody })

const policies = defaultFailurePolicies({ ...defaultRetryOptions, initialDelayMs: 2000, jitter: 0, maxAttempts: 3 })

test.each([
  ['a 429 is retried after its retry-after', apiError(429, '{}', { 'retry-after': '2' }), 1, { kind: 'retry', delayMs: 2000 }],
  ['a 500 backs off', apiError(500, '{}'), 1, { kind: 'retry', delayMs: 2000 }],
  ['a full context is an overflow', apiError(400, '{"error":{"code":"context_length_exceeded","message":"too long"}}'), 1, { kind: 'overflow' }],
  ['a 401 is fatal', apiError(401, '{"error":{"message":"bad key"}}'), 1, { kind: 'fatal', error: { name: 'ProviderAuthError' } }],
  ['the last attempt gives up with RetriesExhaustedError', apiError(503, '{}'), 3, { kind: 'fatal', error: { name: 'RetriesExhaustedError', reason: 'max-attempts', attempts: 3 } }],
] as const)('%s', (_name, error, attempt, expected) => {
  expect(decideFailure(error, { attempt, waitedMs: 0 }, policies)).toMatchObject(expected)
})

test('a replaced classifier and retry policy decide; a wait the timer cannot hold is bounded', () => {
  const questions: unknown[] = []
  const custom: FailurePolicies = {
    classify: (error) => ({ kind: 'retryable', error: { name: 'TeapotError', message: String((error as Error).message) }, headers: { 'x-wait': '1' } }),
    retry: (question) => {
      questions.push(question)
      return question.attempt < 2 ? { action: 'retry', delayMs: 2 ** 40, source: 'backoff' } : { action: 'give-up', reason: 'max-attempts' }
    },
  }
  expect(decideFailure(new Error('short and stout'), { attempt: 1, waitedMs: 5 }, custom)).toEqual({
    kind: 'retry',
    error: { name: 'TeapotError', message: 'short and stout' },
    delayMs: 2 ** 31 - 1,
  })
  expect(decideFailure(new Error('again'), { attempt: 2, waitedMs: 10 }, custom)).toMatchObject({
    kind: 'fatal',
    error: { name: 'RetriesExhaustedError', attempts: 2, lastError: { name: 'TeapotError' } },
  })
  expect(questions).toEqual([
    { attempt: 1, headers: { 'x-wait': '1' }, waitedMs: 5, error: new Error('short and stout') },
    { attempt: 2, headers: { 'x-wait': '1' }, waitedMs: 10, error: new Error('again') },
  ])
})
