/**
 * The engine's core scenarios against `@ai-sdk/openai` (v3, ai v6) on the Responses API,
 * through the scripted server's Responses streaming protocol (`POST /v1/responses`): OpenAI's
 * real error bodies and headers, reasoning summaries, function calls, and the item ids the next
 * request refers to.
 */
import { tool } from 'ai'
import { z } from 'zod'
import type { ToolPart } from '../../src'
import { assistantParts, createHarness, openaiResponsesModelFor, type Harness } from '../support/harness'

let h: Harness
afterEach(async () => {
  await h?.close()
})

const echo = tool({
  description: 'Echo the text',
  inputSchema: z.object({ text: z.string() }),
  execute: async ({ text }) => ({ echoed: text }),
})

const openaiError = (message: string, type: string, code: string | null, param: string | null = null) => ({ error: { message, type, param, code } })

async function run(prompt = 'hi') {
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, prompt)
  const result = await turn.done
  return { session, turn, result, parts: await assistantParts(h.engine, session.id), states: (await h.engine.transitions(turn.id)).map((t) => t.to) }
}

test('a text turn: the Responses request, the streamed text and the usage', async () => {
  h = await createHarness({ system: 'Be brief.' }, openaiResponsesModelFor)
  h.server.text('Hello from Responses', { usage: { input: 20, output: 7, reasoning: 3, cacheRead: 8 } })
  const { result, parts, session } = await run('hi')
  expect(result.outcome).toBe('completed')
  expect(parts.find((p) => p.type === 'text')).toMatchObject({ text: 'Hello from Responses' })
  const [request] = h.server.requests
  expect(request.protocol).toBe('openai-responses')
  expect(request.headers.authorization).toBe('Bearer test-key')
  expect(request.body).toMatchObject({ model: 'gpt-test', stream: true, input: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: [{ type: 'input_text', text: 'hi' }] }] })
  const [, assistant] = await h.engine.messages(session.id)
  expect(assistant.info.tokens).toMatchObject({ input: 20, output: 7, reasoning: 3, cache: { read: 8 } })
})

test('reasoning summary, text and a function call: item ids stored, referred to on the next request', async () => {
  h = await createHarness({ tools: { echo } }, openaiResponsesModelFor)
  h.server.push({
    type: 'stream',
    chunks: [{ reasoning: 'The user wants an echo.', signature: 'gAAAAABencrypted' }, { text: 'Calling echo.' }, { tool: { name: 'echo', input: { text: 'ping' }, id: 'call_1' } }],
  })
  h.server.text('done')
  const { result, parts, states } = await run('use echo')
  expect(result.outcome).toBe('completed')
  expect(states).toEqual(['step-gate', 'streaming', 'tool-running', 'streaming', 'completed'])
  const first = parts.filter((p) => p.step === 1)
  const reasoning = first.find((p) => p.type === 'reasoning')!
  const text = first.find((p) => p.type === 'text')!
  const call = first.find((p): p is ToolPart => p.type === 'tool')!
  expect(reasoning).toMatchObject({ text: 'The user wants an echo.', providerMetadata: { openai: { itemId: expect.stringMatching(/^rs_/), reasoningEncryptedContent: 'gAAAAABencrypted' } } })
  expect(text).toMatchObject({ text: 'Calling echo.', providerMetadata: { openai: { itemId: expect.stringMatching(/^msg_/) } } })
  expect(call).toMatchObject({ callId: 'call_1', state: { status: 'completed', output: { echoed: 'ping' } }, providerMetadata: { openai: { itemId: expect.stringMatching(/^fc_/) } } })
  expect(h.server.requests[0].body.tools).toEqual([expect.objectContaining({ type: 'function', name: 'echo', description: 'Echo the text' })])
  // Stored responses (the default): the reasoning and message items go back as references by id.
  const openai = (p: { providerMetadata?: Record<string, Record<string, unknown>> }) => p.providerMetadata!.openai.itemId
  expect(h.server.requests[1].body.input.slice(1)).toEqual([
    { type: 'item_reference', id: openai(reasoning as never) },
    { type: 'item_reference', id: openai(text as never) },
    { type: 'function_call', call_id: 'call_1', name: 'echo', arguments: JSON.stringify({ text: 'ping' }) },
    { type: 'function_call_output', call_id: 'call_1', output: JSON.stringify({ echoed: 'ping' }) },
  ])
})

test('parallel function calls: both run, both outputs go back', async () => {
  h = await createHarness({ tools: { echo } }, openaiResponsesModelFor)
  h.server.tools([
    { name: 'echo', input: { text: 'a' }, id: 'call_a' },
    { name: 'echo', input: { text: 'b' }, id: 'call_b' },
  ])
  h.server.text('both done')
  const { result, parts } = await run()
  expect(result.outcome).toBe('completed')
  expect(parts.filter((p): p is ToolPart => p.type === 'tool').map((p) => [p.callId, p.state.status])).toEqual([
    ['call_a', 'completed'],
    ['call_b', 'completed'],
  ])
  const outputs = h.server.requests[1].body.input.filter((i: { type?: string }) => i.type === 'function_call_output')
  expect(outputs.map((o: { call_id: string }) => o.call_id)).toEqual(['call_a', 'call_b'])
})

test.each([
  [
    '429 rate_limit_exceeded with retry-after-ms',
    429,
    openaiError('Rate limit reached for gpt-test in organization org-abc on tokens per min (TPM): Limit 30000, Used 29000, Requested 2000. Please try again in 20ms.', 'tokens', 'rate_limit_exceeded'),
    { 'retry-after-ms': '20', 'x-ratelimit-remaining-tokens': '0', 'x-request-id': 'req_abc' },
  ],
  ['500 server_error', 500, openaiError('The server had an error while processing your request. Sorry about that!', 'server_error', null), { 'x-request-id': 'req_def' }],
  ['503 engine overloaded', 503, openaiError('The engine is currently overloaded, please try again later', 'server_error', null), {}],
])('%s is retried, then the turn completes', async (_name, status, body, headers) => {
  h = await createHarness({}, openaiResponsesModelFor)
  h.server.error(status, body, headers)
  h.server.text('recovered')
  const { result, states } = await run()
  expect(result.outcome).toBe('completed')
  expect(states).toEqual(['step-gate', 'streaming', 'retry-waiting', 'streaming', 'completed'])
})

test('an error event in the middle of the stream (server_error) is retried', async () => {
  h = await createHarness({}, openaiResponsesModelFor)
  h.server.push({
    type: 'stream',
    chunks: [{ text: 'Half' }, { raw: JSON.stringify({ type: 'error', code: 'server_error', message: 'The server had an error while processing your request.', param: null, sequence_number: 9 }) }],
    end: 'hang',
  })
  h.server.text('whole')
  const { result, states } = await run()
  expect(result.outcome).toBe('completed')
  expect(states).toEqual(['step-gate', 'streaming', 'retry-waiting', 'streaming', 'completed'])
})

test.each([
  ['401 invalid_api_key', 401, openaiError('Incorrect API key provided: sk-test***key. You can find your API key at https://platform.openai.com/account/api-keys.', 'invalid_request_error', 'invalid_api_key'), 'ProviderAuthError'],
  ['429 insufficient_quota', 429, openaiError('You exceeded your current quota, please check your plan and billing details.', 'insufficient_quota', 'insufficient_quota'), 'APIError'],
  ['400 invalid_request_error', 400, openaiError("Invalid type for 'input[1].content': expected one of an array of input item content items, or a string.", 'invalid_request_error', 'invalid_type', 'input[1].content'), 'APIError'],
])('%s fails the turn at once', async (_name, status, body, name) => {
  h = await createHarness({}, openaiResponsesModelFor)
  h.server.error(status, body)
  const { result, states } = await run()
  expect(result.outcome).toBe('failed')
  expect(states).toEqual(['step-gate', 'streaming', 'failed'])
  expect(result.error).toMatchObject({ name })
  expect(h.server.calls).toBe(1)
})

test('400 context_length_exceeded: an overflow, compacted, then the step runs again', async () => {
  h = await createHarness({}, openaiResponsesModelFor)
  h.server.error(400, openaiError('Your input exceeds the context window of this model. Please adjust your input and try again.', 'invalid_request_error', 'context_length_exceeded', 'input'))
  h.server.text('Summary: hi.')
  h.server.text('Hi again')
  const { result, states } = await run()
  expect(result.outcome).toBe('completed')
  expect(states).toEqual(['step-gate', 'streaming', 'compacting', 'step-gate', 'streaming', 'completed'])
})

test('an incomplete response (max_output_tokens) finishes the step with reason length', async () => {
  h = await createHarness({}, openaiResponsesModelFor)
  h.server.text('cut sho', { finish: 'max_output_tokens' })
  const { result, parts } = await run()
  expect(result.outcome).toBe('completed')
  expect(parts.find((p) => p.type === 'step-finish')).toMatchObject({ reason: 'length' })
})

test('abort mid-stream: the turn ends aborted and keeps the text streamed so far', async () => {
  h = await createHarness({ flushIntervalMs: 0 }, openaiResponsesModelFor)
  h.server.push({ type: 'stream', chunks: [{ text: 'partial ' }, { text: 'answer' }], end: 'hang' })
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'hi')
  await h.waitForEvent((e) => e.type === 'part.delta' && e.delta === 'answer')
  turn.abort()
  expect((await turn.done).outcome).toBe('aborted')
  expect((await assistantParts(h.engine, session.id)).find((p) => p.type === 'text')).toMatchObject({ text: 'partial answer' })
})
