/**
 * OpenTelemetry spans of a real turn (scripted server, real provider, real database), read
 * back from the OpenTelemetry SDK's in-memory exporter: the span tree and the GenAI attributes.
 */
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base'
import { trace } from '@opentelemetry/api'
import { tool } from 'ai'
import { z } from 'zod'
import { createEngine, InvalidOptionError } from '../../src'
import { createHarness, type Harness } from '../support/harness'

let h: Harness
let exporter: InMemorySpanExporter
let provider: BasicTracerProvider
beforeEach(() => {
  exporter = new InMemorySpanExporter()
  provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
})
afterEach(async () => {
  await h?.close()
  await provider.shutdown()
})

const echo = tool({
  description: 'Echo the text',
  inputSchema: z.object({ text: z.string() }),
  execute: async ({ text }) => ({ echoed: text }),
})

const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId
const named = (prefix: string) => exporter.getFinishedSpans().filter((s) => s.name.startsWith(prefix))

async function runTurn(prompt: string) {
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, prompt)
  const result = await turn.done
  await h.waitForEvent((e) => e.type === 'turn.transition' && e.turnId === turn.id && ['completed', 'failed', 'aborted'].includes(e.to))
  return { turn, result }
}

test('a tool turn: one turn span; state visits, model calls and the tool run are its children, with GenAI attributes', async () => {
  h = await createHarness({ tools: { echo }, telemetry: { tracer: provider.getTracer('test') } })
  h.server.tool('echo', { text: 'ping' }, { usage: { input: 30, output: 8, reasoning: 2 } })
  h.server.text('done', { usage: { input: 50, output: 3 } })
  const { turn, result } = await runTurn('echo ping')
  expect(result.outcome).toBe('completed')

  const [root] = named('turnchart.turn')
  expect(named('turnchart.turn')).toHaveLength(1)
  expect(parentOf(root)).toBeUndefined()
  expect(root.attributes).toMatchObject({ 'turnchart.turn.id': turn.id, 'turnchart.turn.outcome': 'completed' })
  const rootId = root.spanContext().spanId

  const states = named('turnchart.state').sort((a, b) => a.startTime[0] - b.startTime[0] || a.startTime[1] - b.startTime[1])
  expect(states.map((s) => s.attributes['turnchart.state'])).toEqual(['step-gate', 'streaming', 'tool-running', 'streaming'])
  for (const span of states) expect(parentOf(span)).toBe(rootId)

  const calls = named('chat ')
  expect(calls.map((s) => s.name)).toEqual(['chat test-model', 'chat test-model'])
  for (const span of calls) expect(parentOf(span)).toBe(rootId)
  expect(calls[0].attributes).toMatchObject({
    'gen_ai.operation.name': 'chat',
    'gen_ai.provider.name': 'scripted.chat',
    'gen_ai.request.model': 'test-model',
    'gen_ai.response.finish_reasons': ['tool-calls'],
    'gen_ai.usage.input_tokens': 30,
    'gen_ai.usage.output_tokens': 8,
    'gen_ai.usage.reasoning_tokens': 2,
    'turnchart.step': 1,
    'turnchart.attempt': 1,
  })
  expect(calls[1].attributes).toMatchObject({ 'gen_ai.response.finish_reasons': ['stop'], 'gen_ai.usage.input_tokens': 50, 'turnchart.step': 2 })

  const [toolSpan] = named('execute_tool')
  expect(toolSpan.name).toBe('execute_tool echo')
  expect(parentOf(toolSpan)).toBe(rootId)
  expect(toolSpan.attributes).toMatchObject({ 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': 'echo', 'gen_ai.tool.call.id': 'call_1' })
  // Inputs and outputs are off by default: prompts and tool data may be personal.
  for (const span of [...calls, toolSpan]) {
    expect(Object.keys(span.attributes).filter((k) => /messages|arguments|result/.test(k))).toEqual([])
  }
})

test('recordInputs and recordOutputs put the prompt, the answer and the tool data on the spans', async () => {
  h = await createHarness({ tools: { echo }, system: 'Be brief.', telemetry: { tracer: provider.getTracer('test'), recordInputs: true, recordOutputs: true } })
  h.server.tool('echo', { text: 'ping' })
  h.server.text('pong')
  await runTurn('echo ping')
  const calls = named('chat ')
  expect(JSON.parse(calls[0].attributes['gen_ai.input.messages'] as string)).toEqual([
    { role: 'system', content: 'Be brief.' },
    { role: 'user', content: 'echo ping' },
  ])
  expect(JSON.parse(calls[1].attributes['gen_ai.output.messages'] as string)).toEqual([{ type: 'text', text: 'pong' }])
  const [toolSpan] = named('execute_tool')
  expect(JSON.parse(toolSpan.attributes['gen_ai.tool.call.arguments'] as string)).toEqual({ text: 'ping' })
  expect(JSON.parse(toolSpan.attributes['gen_ai.tool.call.result'] as string)).toEqual({ echoed: 'ping' })
})

test('failed model calls (a retried 503, then a fatal 401): their spans and the turn span have status ERROR', async () => {
  h = await createHarness({ telemetry: { tracer: provider.getTracer('test') } })
  h.server.error(503, { error: { message: 'overloaded', type: 'server_error' } })
  h.server.error(401, { error: { message: 'Incorrect API key provided', type: 'invalid_request_error', code: 'invalid_api_key' } })
  const { result } = await runTurn('hi')
  expect(result.outcome).toBe('failed')
  const calls = named('chat ')
  expect(calls.map((s) => [s.attributes['turnchart.attempt'], s.status.code])).toEqual([
    [1, 2],
    [2, 2],
  ])
  expect(calls[1].events.some((e) => e.name === 'exception')).toBe(true)
  const [root] = named('turnchart.turn')
  expect(root.status.code).toBe(2)
  expect(root.attributes['turnchart.turn.outcome']).toBe('failed')
  expect(named('turnchart.state').map((s) => s.attributes['turnchart.state'])).toEqual(expect.arrayContaining(['step-gate', 'streaming', 'retry-waiting']))
})

test('without a tracer option the global tracer provider is used (a no-op until the app registers an SDK)', async () => {
  h = await createHarness()
  h.server.text('one')
  h.server.text('two')
  expect((await runTurn('hi')).result.outcome).toBe('completed')
  expect(exporter.getFinishedSpans()).toEqual([])
  trace.setGlobalTracerProvider(provider)
  try {
    expect((await runTurn('again')).result.outcome).toBe('completed')
    expect(named('turnchart.turn')).toHaveLength(1)
    expect(named('chat ')).toHaveLength(1)
  } finally {
    trace.disable()
  }
})

test.each([
  ['telemetry.tracer', { tracer: {} }],
  ['telemetry.recordInputs', { recordInputs: 'yes' }],
  ['telemetry.sampler', { sampler: 1 }],
])('invalid %s is refused by createEngine', async (option, telemetry) => {
  const model = { specificationVersion: 'v3', provider: 'p', modelId: 'm', doStream: async () => ({}) }
  const error = await createEngine({ model, telemetry } as never).catch((e: unknown) => e)
  expect(InvalidOptionError.isInstance(error)).toBe(true)
  expect(error).toMatchObject({ option })
})
