/**
 * Retry through the engine: each delay source, the attempt bound, the header ceiling, and a
 * retry delay driven by XState's simulated clock.
 */
import { SimulatedClock } from 'xstate'
import { classifyError } from '../../src'
import { createHarness, assistantParts, type Harness } from '../support/harness'
import { turnStateName } from '../../src'

let h: Harness
afterEach(async () => {
  await h?.close()
})

function retryStatuses(h: Harness, sessionId: string) {
  return h.events.flatMap((e) =>
    e.type === 'session.status' && e.sessionId === sessionId && e.status.type === 'retry' ? [e.status] : [],
  )
}

test('retries are bounded: maxAttempts failures end the turn with RetriesExhaustedError', async () => {
  h = await createHarness({ retry: { maxAttempts: 3, initialDelayMs: 1, maxDelayMs: 1, jitter: 0 } })
  for (let i = 0; i < 3; i++) h.server.error(503, { error: { message: 'overloaded' } })
  h.server.text('never sent')
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'x')
  const result = await turn.done
  expect(result.outcome).toBe('failed')
  expect(h.server.calls).toBe(3)
  expect(result.error).toMatchObject({ name: 'RetriesExhaustedError', reason: 'max-attempts', attempts: 3 })
  expect(result.error?.message).toMatch(/retries exhausted after 3 attempts/)
  expect((result.error?.lastError as { statusCode: number }).statusCode).toBe(503)
  expect(retryStatuses(h, session.id).map((s) => s.attempt)).toEqual([1, 2])
  const messages = await h.engine.messages(session.id)
  expect(messages[1].info.error?.name).toBe('RetriesExhaustedError')
  expect((await h.engine.transitions(turn.id)).map((t) => t.to)).toEqual([
    'step-gate', 'streaming', 'retry-waiting', 'streaming', 'retry-waiting', 'streaming', 'failed',
  ])
})

test('retry-after-ms is honoured as milliseconds', async () => {
  h = await createHarness()
  h.server.error(429, { error: { message: 'rate limit' } }, { 'retry-after-ms': '150' })
  h.server.text('ok')
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'x')
  await turn.done
  const [status] = retryStatuses(h, session.id)
  const log = await h.engine.transitions(turn.id)
  const waiting = log.find((t) => t.to === 'retry-waiting')!
  expect(status.next - waiting.time).toBe(150)
  expect(log[log.indexOf(waiting) + 1].time - waiting.time).toBeGreaterThanOrEqual(140)
  expect((await h.engine.getTurn(turn.id))?.retryAt).toBeNull()
})

test('retry-after in seconds and as an HTTP date', async () => {
  h = await createHarness()
  h.server.error(503, 'busy', { 'retry-after': '0.1' })
  h.server.error(503, 'busy', { 'retry-after': new Date(Date.now() + 2000).toUTCString() })
  h.server.text('ok')
  const session = await h.engine.createSession()
  const clockStart = Date.now()
  const turn = h.engine.prompt(session.id, 'x')
  // the date is in whole seconds: between 1 and 2 s from now. Abort once we saw it.
  await h.waitForEvent((e) => e.type === 'session.status' && e.status.type === 'retry' && e.status.attempt === 2)
  const statuses = retryStatuses(h, session.id)
  expect(statuses[0].message).toBeTruthy()
  const secondDelay = statuses[1].next - clockStart
  expect(secondDelay).toBeGreaterThan(900)
  expect(secondDelay).toBeLessThanOrEqual(2100)
  turn.abort()
  expect((await turn.done).outcome).toBe('aborted')
  expect(h.server.calls).toBe(2)
})

test('a header delay above maxHeaderDelayMs fails the turn instead of hanging', async () => {
  h = await createHarness({ retry: { maxHeaderDelayMs: 1000 } })
  h.server.error(429, { error: { message: 'rate limit' } }, { 'retry-after': '3600' })
  const session = await h.engine.createSession()
  const result = await h.engine.prompt(session.id, 'x').done
  expect(result.outcome).toBe('failed')
  expect(result.error).toMatchObject({ name: 'RetriesExhaustedError', reason: 'header-delay-too-long' })
  expect(h.server.calls).toBe(1)
})

test('exponential backoff waits on a simulated clock until it is advanced', async () => {
  const clock = new SimulatedClock()
  h = await createHarness({ clock, retry: { initialDelayMs: 2000, maxDelayMs: 30000, jitter: 0 } })
  h.server.error(503, { error: { message: 'server error' } })
  h.server.error(503, { error: { message: 'server error' } })
  h.server.text('finally')
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'x')
  await h.waitForEvent((e) => e.type === 'session.status' && e.status.type === 'retry' && e.status.attempt === 1)
  expect(turnStateName(turn.actor.getSnapshot())).toBe('retry-waiting')
  expect(turn.actor.getSnapshot().context.retryDelayMs).toBe(2000)
  clock.increment(1999)
  expect(turnStateName(turn.actor.getSnapshot())).toBe('retry-waiting')
  expect(h.server.calls).toBe(1)
  clock.increment(1)
  await h.server.waitForCall(2)
  await h.waitForEvent((e) => e.type === 'session.status' && e.status.type === 'retry' && e.status.attempt === 2)
  expect(turn.actor.getSnapshot().context.retryDelayMs).toBe(4000)
  clock.increment(4000)
  const result = await turn.done
  expect(result.outcome).toBe('completed')
  expect(h.server.calls).toBe(3)
  const text = (await assistantParts(h.engine, session.id)).filter((p) => p.type === 'text')
  expect(text.map((p) => (p as { text: string }).text)).toEqual(['finally'])
})

test('the retry deadline is persisted on the turn while waiting', async () => {
  const clock = new SimulatedClock()
  h = await createHarness({ clock, retry: { initialDelayMs: 5000, jitter: 0 } })
  h.server.error(500, { error: { message: 'internal server error' } })
  h.server.text('ok')
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'x')
  const transition = await h.waitForEvent((e) => e.type === 'turn.transition' && e.to === 'retry-waiting')
  const record = await h.engine.getTurn(turn.id)
  expect(record).toMatchObject({ state: 'retry-waiting', attempt: 1, outcome: null })
  expect(record!.retryAt! - (transition as { time: number }).time).toBe(5000)
  clock.increment(5000)
  expect((await turn.done).outcome).toBe('completed')
})

test('401 is not retried and stores a ProviderAuthError', async () => {
  h = await createHarness()
  h.server.error(401, { error: { message: 'Incorrect API key provided', code: 'invalid_api_key' } })
  const session = await h.engine.createSession()
  const result = await h.engine.prompt(session.id, 'x').done
  expect(result.outcome).toBe('failed')
  expect(result.error?.name).toBe('ProviderAuthError')
  expect(h.server.calls).toBe(1)
})

test('a stream that goes silent is caught by the idle timeout and retried', async () => {
  h = await createHarness({ streamIdleTimeoutMs: 200 })
  h.server.push({ type: 'stream', chunks: [{ text: 'one' }], end: 'hang' })
  h.server.text('two')
  const session = await h.engine.createSession()
  const result = await h.engine.prompt(session.id, 'x').done
  expect(result.outcome).toBe('completed')
  expect(h.server.calls).toBe(2)
  const texts = (await assistantParts(h.engine, session.id)).filter((p) => p.type === 'text')
  expect(texts.map((p) => (p as { text: string }).text)).toEqual(['one', 'two'])
  expect(h.events.some((e) => e.type === 'session.status' && e.status.type === 'retry' && /sent nothing for 200 ms/.test(e.status.message))).toBe(true)
})

test('a user errorClassifier and retryPolicy are honoured end to end', async () => {
  const asked: Array<{ attempt: number; waitedMs: number }> = []
  h = await createHarness({
    // A 418 is fatal by default; this app says its gateway answers 418 when busy.
    errorClassifier: (error) => {
      const classified = classifyError(error)
      return classified.error.statusCode === 418 ? { ...classified, kind: 'retryable' } : classified
    },
    retryPolicy: ({ attempt, waitedMs }) => {
      asked.push({ attempt, waitedMs })
      return attempt < 2 ? { action: 'retry', delayMs: 3, source: 'backoff' } : { action: 'give-up', reason: 'max-attempts' }
    },
  })
  h.server.error(418, { error: { message: 'busy teapot' } })
  h.server.error(418, { error: { message: 'still a busy teapot' } })
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'x')
  const result = await turn.done
  expect(result.outcome).toBe('failed')
  expect(result.error).toMatchObject({ name: 'RetriesExhaustedError', attempts: 2, lastError: { statusCode: 418 } })
  expect((await h.engine.transitions(turn.id)).map((t) => t.to)).toEqual(['step-gate', 'streaming', 'retry-waiting', 'streaming', 'failed'])
  expect(asked).toEqual([
    { attempt: 1, waitedMs: 0 },
    { attempt: 2, waitedMs: 3 },
  ])
})

test('with the default retry options a provider answering a plain 500 forever fails the turn after 15 s of waiting; the message names the status', async () => {
  const clock = new SimulatedClock()
  h = await createHarness({ clock, retry: { jitter: 0 } })
  for (let i = 0; i < 6; i++) h.server.error(500, { error: { message: 'internal server error' } })
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'x')
  const delays: number[] = []
  for (let attempt = 1; attempt <= 4; attempt++) {
    await h.waitForEvent((e) => e.type === 'session.status' && e.status.type === 'retry' && e.status.attempt === attempt)
    const delay = turn.actor.getSnapshot().context.retryDelayMs ?? 0
    delays.push(delay)
    clock.increment(delay)
  }
  const result = await turn.done
  expect(delays).toEqual([1000, 2000, 4000, 8000])
  expect(h.server.calls).toBe(5)
  expect(result.outcome).toBe('failed')
  expect(result.error).toMatchObject({ name: 'RetriesExhaustedError', reason: 'max-attempts', attempts: 5 })
  expect(result.error!.message).toMatch(/^retries exhausted after 5 attempts; last error \(HTTP 500\): /)
})
