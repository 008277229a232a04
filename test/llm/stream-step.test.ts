/**
 * streamStep through its port (`StepScope`): a fake `LanguageModelV3` whose stream parts the
 * test scripts, and a fake scope that records what the step opened, appended and closed. No
 * engine, no database, no HTTP.
 */
import { APICallError } from '@ai-sdk/provider'
import { jsonSchema, tool, type ToolSet } from 'ai'
import type { TurnEvent } from '../../machines/turn.types'
import { MessageAbortedError } from '../../src/core/errors'
import { streamStep, type StepScope } from '../../src/llm/stream-step'
import { defaultFailurePolicies, type FailurePolicies } from '../../src/policy/decide-failure'
import { defaultDoomLoopOptions } from '../../src/policy/doom-loop'
import { defaultRetryOptions } from '../../src/policy/retry-delay'
import type { MessageInfo, MessageWithParts, Part, TextPart, ToolPart } from '../../src/core/types'
import { fakeModel, finish, text, type FakeModel, type ScriptItem } from '../support/fake-model'
import { StateExit } from '../../src/core/state-exit'

const policies = defaultFailurePolicies({ ...defaultRetryOptions, jitter: 0, maxAttempts: 3 })

const echo = tool({
  description: 'Echo',
  inputSchema: jsonSchema<{ say: string }>({ type: 'object', properties: { say: { type: 'string' } }, required: ['say'] }),
})
const guarded = tool({ description: 'Needs a yes', inputSchema: jsonSchema<object>({ type: 'object' }), needsApproval: true })

interface Recorded {
  /** Every part the step added, in order. */
  added: Part[]
  /** Deltas appended, as `partId: delta`. */
  appended: string[]
  /** Parts the step said changed (closed text, tool states), in order. */
  changed: Part[]
  saved: MessageInfo[]
}

function fakeScope(model: FakeModel, options: { tools?: ToolSet; failure?: FailurePolicies; idleMs?: number; context?: number; onAppend?: () => void } = {}) {
  const message: MessageWithParts = { info: { id: 'msg_1', sessionId: 'ses_1', role: 'assistant', turnId: 'trn_1', time: { created: 1 } }, parts: [] }
  const recorded: Recorded = { added: [], appended: [], changed: [], saved: [] }
  const scope: StepScope = {
    turnId: 'trn_1',
    sessionId: 'ses_1',
    config: {
      model,
      system: 'be brief',
      tools: options.tools ?? {},
      call: {},
      limits: options.context ? { context: options.context, output: 10 } : undefined,
      compaction: { reserved: 0 },
      streamIdleTimeoutMs: options.idleMs ?? 5_000,
      pricing: undefined,
      doomLoop: defaultDoomLoopOptions,
      failure: options.failure ?? policies,
      telemetry: { modelCall: () => undefined, recordOutputs: false },
      redactor: { value: (v) => v },
    },
    messages: {
      modelMessages: () => [{ role: 'user', content: 'hi' }],
      assistantMessage: () => message,
      assistantMessages: () => [message],
      placePart(target, part) {
        target.parts.push(part)
        return undefined
      },
      saveMessage: (info) => recorded.saved.push(structuredClone(info)),
      stepTools: [],
    },
    writer: {
      add: (part) => recorded.added.push(part),
      append(part: TextPart, delta: string) {
        part.text += delta
        recorded.appended.push(`${part.id}: ${delta}`)
        options.onAppend?.()
      },
      changed: (part) => recorded.changed.push(part),
    },
  }
  return { scope, message, recorded }
}

const input = { turnId: 'trn_1', step: 1, attempt: 1, waitedMs: 0 }
const run = (scope: StepScope, exit = new StateExit()): Promise<TurnEvent> => streamStep({ scope }, input, exit)
const apiError = (statusCode: number, responseBody = '{}', responseHeaders: Record<string, string> = {}) =>
  new APICallError({ message: `HTTP ${statusCode}`, url: 'http://127.0.0.1/v1', requestBodyValues: {}, statusCode, responseHeaders, responseBody })
const types = (parts: Part[]) => parts.map((p) => p.type)

test('text and reasoning: parts opened, deltas appended, closed; the finish saves usage and reports step.finished', async () => {
  const model = fakeModel([
    { type: 'stream-start', warnings: [] },
    { type: 'reasoning-start', id: 'r' },
    { type: 'reasoning-delta', id: 'r', delta: 'thinking' },
    { type: 'reasoning-end', id: 'r' },
    ...text('t', 'Hel', 'lo'),
    finish('stop', 12, 3),
  ])
  const { scope, message, recorded } = fakeScope(model)

  await expect(run(scope)).resolves.toEqual({ type: 'step.finished', finishReason: 'stop', toolCalls: 0, overflow: false })

  expect(types(recorded.added)).toEqual(['step-start', 'reasoning', 'text', 'step-finish'])
  const [, reasoning, answer] = recorded.added as TextPart[]
  expect(recorded.appended).toEqual([`${reasoning.id}: thinking`, `${answer.id}: Hel`, `${answer.id}: lo`])
  expect(answer).toMatchObject({ text: 'Hello', step: 1, attempt: 1, messageId: 'msg_1' })
  // Each text part is closed once, when its block ends.
  expect(recorded.changed).toEqual([reasoning, answer])
  expect(reasoning.time.end).toEqual(expect.any(Number))
  expect(answer.time.end).toEqual(expect.any(Number))
  expect(recorded.saved).toEqual([expect.objectContaining({ finish: 'stop', tokens: expect.objectContaining({ input: 12, output: 3 }) })])
  expect(message.info.tokens).toMatchObject({ input: 12, output: 3 })
  // The model got the system prompt and the history.
  expect(model.calls[0].prompt).toEqual([
    { role: 'system', content: 'be brief' },
    { role: 'user', content: [{ type: 'text', text: 'hi' }] },
  ])
})

test('tool calls: a valid call runs, one that needs approval waits, an unknown tool is an error; stepTools holds them in order', async () => {
  const model = fakeModel([
    { type: 'tool-input-start', id: 'c1', toolName: 'echo' },
    { type: 'tool-input-delta', id: 'c1', delta: '{"say":"hi"}' },
    { type: 'tool-input-end', id: 'c1' },
    { type: 'tool-call', toolCallId: 'c1', toolName: 'echo', input: '{"say":"hi"}' },
    { type: 'tool-call', toolCallId: 'c2', toolName: 'guarded', input: '{}' },
    { type: 'tool-call', toolCallId: 'c3', toolName: 'nope', input: '{}' },
    finish('tool-calls'),
  ])
  const { scope, recorded } = fakeScope(model, { tools: { echo, guarded } })

  await expect(run(scope)).resolves.toEqual({ type: 'step.finished', finishReason: 'tool-calls', toolCalls: 3, overflow: false, approvals: ['c2'] })

  expect(scope.messages.stepTools.map((p) => [p.callId, p.state.status])).toEqual([
    ['c1', 'running'],
    ['c2', 'pending'],
    ['c3', 'error'],
  ])
  const [echoCall, guardedCall, unknownCall] = scope.messages.stepTools
  expect(echoCall.state.input).toEqual({ say: 'hi' })
  expect(guardedCall.state).toMatchObject({ status: 'pending', approval: 'required' })
  expect(unknownCall.state).toMatchObject({ error: "unknown tool 'nope'; available: echo, guarded" })
  // The part was opened at tool-input-start (pending), then changed when its call completed.
  expect(recorded.added.filter((p) => p.type === 'tool')).toEqual(scope.messages.stepTools)
  expect(recorded.changed.filter((p) => p.type === 'tool').map((p) => (p as ToolPart).callId)).toEqual(['c1', 'c2', 'c3', 'c2'])
})

test('an error part (429) fails the attempt: the text stays, closed; its calls never run; the retry policy says when', async () => {
  const model = fakeModel([
    ...text('t', 'partial'),
    { type: 'tool-call', toolCallId: 'c1', toolName: 'echo', input: '{"say":"hi"}' },
    { type: 'error', error: apiError(429, '{}', { 'retry-after': '2' }) },
    finish(), // never read
  ])
  const { scope, recorded } = fakeScope(model, { tools: { echo } })

  const event = await run(scope)

  expect(event).toMatchObject({ type: 'step.failed', overflow: false, retryDelayMs: 2000, error: { name: 'APIError', statusCode: 429 } })
  expect(types(recorded.added)).toEqual(['step-start', 'text', 'tool'])
  const [, answer, call] = recorded.added as [Part, TextPart, ToolPart]
  expect(answer).toMatchObject({ text: 'partial', time: { end: expect.any(Number) } })
  expect(call.state).toMatchObject({ status: 'error', metadata: { interrupted: true }, error: expect.stringContaining('model request failed') })
  expect(recorded.saved).toEqual([]) // no finish: no usage
  expect(scope.messages.stepTools).toEqual([]) // nothing for the tool runner
})

test('a stream that throws mid-way fails the attempt with the replaced policies deciding', async () => {
  const asked: unknown[] = []
  const failure: FailurePolicies = {
    classify: (error) => ({ kind: 'retryable', error: { name: 'BrokenPipe', message: (error as Error).message }, headers: {} }),
    retry: (question) => {
      asked.push(question)
      return { action: 'retry', delayMs: 7, source: 'backoff' }
    },
  }
  const model = fakeModel([...text('t', 'one'), { type: 'text-start', id: 'u' }, { type: 'text-delta', id: 'u', delta: 'two' }, { throw: new Error('socket hang up') }])
  const { scope, recorded } = fakeScope(model, { failure })

  await expect(streamStep({ scope }, { ...input, attempt: 2, waitedMs: 40 }, new StateExit())).resolves.toEqual({
    type: 'step.failed',
    error: { name: 'BrokenPipe', message: 'socket hang up' },
    overflow: false,
    retryDelayMs: 7,
  })
  expect(asked).toEqual([expect.objectContaining({ attempt: 2, waitedMs: 40 })])
  // The block the throw cut off is closed too.
  const texts = recorded.added.filter((p): p is TextPart => p.type === 'text')
  expect(texts.map((p) => [p.text, typeof p.time.end])).toEqual([
    ['one', 'number'],
    ['two', 'number'],
  ])
})

test('a full context (the provider says so) is reported as an overflow, not a retry', async () => {
  const model = fakeModel([], { rejectWith: apiError(400, '{"error":{"code":"context_length_exceeded","message":"too long"}}') })
  const { scope, recorded } = fakeScope(model)

  await expect(run(scope)).resolves.toMatchObject({ type: 'step.failed', overflow: true, retryDelayMs: null })
  expect(recorded.added).toEqual([])
})

test('usage that fills the usable context finishes the step with overflow', async () => {
  const { scope } = fakeScope(fakeModel([...text('t', 'ok'), finish('stop', 996, 5)]), { context: 1_000 })
  await expect(run(scope)).resolves.toMatchObject({ type: 'step.finished', overflow: true })
})

test('output without a finish still finishes the step (as streamText); no output at all is a failed attempt, retried', async () => {
  const cut = fakeScope(fakeModel(text('t', 'cut')))
  await expect(run(cut.scope)).resolves.toEqual({ type: 'step.finished', finishReason: 'other', toolCalls: 0, overflow: false })

  const empty = fakeScope(fakeModel([{ type: 'stream-start', warnings: [] }]))
  await expect(run(empty.scope)).resolves.toMatchObject({
    type: 'step.failed',
    overflow: false,
    retryDelayMs: expect.any(Number),
    error: { name: 'EmptyModelStreamError', message: expect.stringContaining('No output generated') },
  })
  expect(empty.recorded.added).toEqual([])
})

test('a silent stream times out with StreamIdleTimeoutError, retryable', async () => {
  const { scope, recorded } = fakeScope(fakeModel([...text('t', 'hel'), { stall: true }]), { idleMs: 30 })
  await expect(run(scope)).resolves.toMatchObject({ type: 'step.failed', retryDelayMs: expect.any(Number), error: { name: 'StreamIdleTimeoutError', idleMs: 30 } })
  expect(recorded.added.find((p) => p.type === 'text')).toMatchObject({ text: 'hel', time: { end: expect.any(Number) } })
})

test('the chart leaving the state stops the stream: step.failed with the abort, no retry, the open text closed', async () => {
  const exit = new StateExit()
  const model = fakeModel([{ type: 'text-start', id: 't' }, { type: 'text-delta', id: 't', delta: 'so far' }, { stall: true }])
  // Leave when the first delta arrives (the stream then stalls: only the abort can end it).
  const { scope, recorded } = fakeScope(model, { onAppend: () => exit.leave(new MessageAbortedError()) })

  const event = await run(scope, exit)

  expect(event).toEqual({ type: 'step.failed', error: new MessageAbortedError().toJSON(), overflow: false, retryDelayMs: null })
  expect(model.calls[0].abortSignal?.aborted).toBe(true)
  const open = recorded.added.find((p): p is TextPart => p.type === 'text')
  expect(open).toMatchObject({ text: 'so far', time: { end: expect.any(Number) } })
  expect(recorded.changed).toEqual([open])
})
