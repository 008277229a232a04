/**
 * summarize through its port (`SummaryScope`): a fake `LanguageModelV3` and a fake scope that
 * records the summary it is given. The outcome is a chart event in the step's failure shape.
 */
import { APICallError } from '@ai-sdk/provider'
import { CompactionFailedError, MessageAbortedError } from '../../src/core/errors'
import { summarize, type SummaryScope } from '../../src/compaction/summarize'
import { defaultFailurePolicies } from '../../src/policy/decide-failure'
import { defaultRetryOptions } from '../../src/policy/retry-delay'
import { errorFromRecord } from '../../src/core/errors/restore'
import type { MessageInfo, MessageWithParts } from '../../src/core/types'
import { fakeModel, finish, text, type FakeModel } from '../support/fake-model'
import { StateExit } from '../../src/core/state-exit'

function fakeScope(model: FakeModel) {
  const summaries: Array<{ text: string; auto: boolean }> = []
  const saved: MessageInfo[] = []
  const scope: SummaryScope = {
    turnId: 'trn_1',
    sessionId: 'ses_1',
    config: {
      model,
      telemetry: { modelCall: () => undefined, recordOutputs: false },
      system: undefined,
      streamIdleTimeoutMs: 5_000,
      compaction: { prompt: 'Summarise the conversation.' },
      failure: defaultFailurePolicies({ ...defaultRetryOptions, jitter: 0, maxAttempts: 2 }),
      call: { temperature: 0, toolChoice: 'required' },
      pricing: undefined,
    },
    messages: {
      modelMessages: () => [
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: 'hello' },
      ],
      addSummary(summary, auto) {
        summaries.push({ text: summary, auto })
        const message: MessageWithParts = { info: { id: 'msg_s', sessionId: 'ses_1', role: 'assistant', summary: true, time: { created: 1 } }, parts: [] }
        return message
      },
      saveMessage: (info) => saved.push(structuredClone(info)),
    },
  }
  return { scope, summaries, saved }
}

const at = { attempt: 1, waitedMs: 0, completes: false }
const exit = () => new StateExit()
const apiError = (statusCode: number, responseBody = '{}', responseHeaders: Record<string, string> = {}) =>
  new APICallError({ message: `HTTP ${statusCode}`, url: 'http://127.0.0.1/v1', requestBodyValues: {}, statusCode, responseHeaders, responseBody })

test('a summary: the history and the prompt are sent without tools; the text is stored with its usage', async () => {
  const model = fakeModel([...text('t', '  The user said hi', '.  '), finish('stop', 40, 8)])
  const { scope, summaries, saved } = fakeScope(model)

  await expect(summarize(scope, at, exit())).resolves.toEqual({ type: 'compaction.finished', completes: false })

  expect(summaries).toEqual([{ text: 'The user said hi.', auto: true }])
  expect(saved).toEqual([expect.objectContaining({ id: 'msg_s', tokens: expect.objectContaining({ input: 40, output: 8 }) })])
  const call = model.calls[0]
  expect(call.prompt.at(-1)).toEqual({ role: 'user', content: [{ type: 'text', text: 'Summarise the conversation.' }] })
  expect(call.prompt).toHaveLength(3)
  expect(call.toolChoice).toBeUndefined()
  expect(call.temperature).toBe(0)
})

test('an answer with no text stores nothing: CompactionFailedError carrying EmptySummaryError, not retried', async () => {
  const { scope, summaries } = fakeScope(fakeModel([...text('t', '   '), finish()]))

  const event = await summarize(scope, at, exit())

  expect(event).toEqual({
    type: 'compaction.failed',
    error: expect.objectContaining({ name: 'CompactionFailedError', lastError: { name: 'EmptySummaryError', message: expect.stringContaining('no text') } }),
    retryDelayMs: null,
  })
  expect(summaries).toEqual([])
  // The record restores as the class (what `turn.done` gives the caller).
  if (event.type === 'compaction.failed') expect(CompactionFailedError.isInstance(errorFromRecord(event.error))).toBe(true)
})

test('a retryable failure is reported like a step: the retry policy gives the delay; the last attempt gives up', async () => {
  const overloaded = () => fakeModel([{ type: 'error', error: apiError(429, '{}', { 'retry-after': '3' }) }])

  const first = await summarize(fakeScope(overloaded()).scope, at, exit())
  expect(first).toMatchObject({
    type: 'compaction.failed',
    error: { name: 'CompactionFailedError', lastError: { name: 'APIError', statusCode: 429 } },
    retryDelayMs: 3000,
  })

  const last = await summarize(fakeScope(overloaded()).scope, { attempt: 2, waitedMs: 3000, completes: false }, exit())
  expect(last).toMatchObject({
    type: 'compaction.failed',
    error: { name: 'CompactionFailedError', lastError: { name: 'RetriesExhaustedError', attempts: 2 } },
    retryDelayMs: null,
  })
})

test('a summary request that itself overflows is a ContextOverflowError (no compaction loop)', async () => {
  const model = fakeModel([], { rejectWith: apiError(400, '{"error":{"code":"context_length_exceeded","message":"too long"}}') })
  await expect(summarize(fakeScope(model).scope, at, exit())).resolves.toMatchObject({
    type: 'compaction.failed',
    error: { name: 'ContextOverflowError', reason: 'summary-overflow' },
    retryDelayMs: null,
  })
})

test('an abort stores nothing and is never retried', async () => {
  const left = new StateExit()
  const model = fakeModel([{ type: 'text-start', id: 't' }, { type: 'text-delta', id: 't', delta: 'half a summ' }, { stall: true }])
  const { scope, summaries } = fakeScope(model)

  const pending = summarize(scope, at, left)
  left.leave(new MessageAbortedError())

  await expect(pending).resolves.toEqual({ type: 'compaction.failed', error: new MessageAbortedError().toJSON(), retryDelayMs: null })
  expect(summaries).toEqual([])
})
