/**
 * A refused connection is retried briefly (three attempts, ten seconds of waiting at most per
 * step: src/policy/connection-refused.ts), while an HTTP 503 keeps the full retry policy.
 */
import net from 'node:net'
import { createOpenAICompatible } from '@ai-sdk/openai-compatible'
import { connectionRefusedRetry, isConnectionRefused, retryOptionsFor } from '../../src/policy/connection-refused'
import { defaultRetryOptions } from '../../src'
import { createHarness, type Harness } from '../support/harness'

let h: Harness | undefined
afterEach(async () => {
  await h?.close()
  h = undefined
})

/** A loopback port nothing listens on (bound, then released). */
async function closedPort(): Promise<number> {
  const server = net.createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as net.AddressInfo
  await new Promise((resolve) => server.close(resolve))
  return port
}

test('a refused connection fails the turn after 3 attempts, not the 8 of the retry policy', async () => {
  const port = await closedPort()
  const model = createOpenAICompatible({ name: 'down', baseURL: `http://127.0.0.1:${port}/v1`, includeUsage: true })('m')
  h = await createHarness({ model, retry: { maxAttempts: 8, initialDelayMs: 5, maxDelayMs: 10, jitter: 0 } })
  const session = await h.engine.createSession()
  const result = await h.engine.prompt(session.id, 'hi').done
  expect(result.outcome).toBe('failed')
  expect(result.error).toMatchObject({ name: 'RetriesExhaustedError', reason: 'max-attempts', attempts: connectionRefusedRetry.maxAttempts })
  expect(JSON.stringify(result.error)).toMatch(/ECONNREFUSED/)
})

test('an HTTP 503 keeps the full policy (8 attempts)', async () => {
  // (the policy alone: with circuits, the fifth failure in a minute would open the model's circuit and the turn wait for it)
  h = await createHarness({ retry: { maxAttempts: 8, initialDelayMs: 1, maxDelayMs: 2, jitter: 0 }, circuitBreaker: false })
  for (let i = 0; i < 8; i++) h.server.error(503, { error: { message: 'unavailable' } })
  const session = await h.engine.createSession()
  const result = await h.engine.prompt(session.id, 'hi').done
  expect(result.error).toMatchObject({ name: 'RetriesExhaustedError', attempts: 8 })
})

test('isConnectionRefused: codes and messages along the cause chain; never with an HTTP status', () => {
  const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' })
  expect(isConnectionRefused(new TypeError('fetch failed', { cause: refused }))).toBe(true)
  expect(isConnectionRefused(new TypeError('fetch failed', { cause: new AggregateError([refused]) }))).toBe(true)
  expect(isConnectionRefused(Object.assign(new Error('x'), { code: 'ConnectionRefused' }))).toBe(true)
  expect(isConnectionRefused(Object.assign(new Error('upstream ECONNREFUSED'), { statusCode: 502 }))).toBe(false)
  expect(isConnectionRefused(Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }))).toBe(false)
  expect(retryOptionsFor(refused, defaultRetryOptions)).toMatchObject({ maxAttempts: 3, maxTotalWaitMs: 10_000, initialDelayMs: defaultRetryOptions.initialDelayMs })
  expect(retryOptionsFor(new Error('other'), defaultRetryOptions)).toBe(defaultRetryOptions)
})
