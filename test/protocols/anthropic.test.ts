/**
 * The engine's core scenarios against `@ai-sdk/anthropic` (v3, ai v6), through the scripted
 * server's Anthropic Messages streaming protocol (`POST /v1/messages`): what the provider sends
 * on the wire, Anthropic's real error bodies and headers, and what the next request carries.
 */
import { tool } from 'ai'
import { z } from 'zod'
import type { ToolPart } from '../../src'
import { anthropicModelFor, assistantParts, createHarness, type Harness } from '../support/harness'

let h: Harness
afterEach(async () => {
  await h?.close()
})

const echo = tool({
  description: 'Echo the text',
  inputSchema: z.object({ text: z.string() }),
  execute: async ({ text }) => ({ echoed: text }),
})

const anthropicError = (type: string, message: string) => ({ type: 'error', error: { type, message } })

async function run(prompt = 'hi') {
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, prompt)
  const result = await turn.done
  return { session, turn, result, parts: await assistantParts(h.engine, session.id), states: (await h.engine.transitions(turn.id)).map((t) => t.to) }
}

test('a text turn: the Messages request, the streamed text and the usage', async () => {
  h = await createHarness({ system: 'Be brief.' }, anthropicModelFor)
  h.server.text('Hello from Claude', { usage: { input: 12, output: 4, cacheRead: 3 } })
  const { result, parts, session } = await run('hi')
  expect(result.outcome).toBe('completed')
  expect(parts.find((p) => p.type === 'text')).toMatchObject({ text: 'Hello from Claude' })
  const [request] = h.server.requests
  expect(request.protocol).toBe('anthropic')
  expect(request.headers['x-api-key']).toBe('test-key')
  expect(request.body).toMatchObject({ model: 'claude-test', stream: true, system: [{ type: 'text', text: 'Be brief.' }], messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }] })
  const [, assistant] = await h.engine.messages(session.id)
  // Anthropic counts cached input apart; the AI SDK adds it to the input total.
  expect(assistant.info.tokens).toMatchObject({ input: 15, output: 4, cache: { read: 3 } })
})

test('thinking and text: a reasoning part and a text part', async () => {
  h = await createHarness({}, anthropicModelFor)
  h.server.push({ type: 'stream', chunks: [{ reasoning: 'Let me think. ' }, { reasoning: 'Done.', signature: 'sig-1' }, { text: 'The answer is 4.' }] })
  const { result, parts } = await run()
  expect(result.outcome).toBe('completed')
  expect(parts.filter((p) => p.type === 'reasoning' || p.type === 'text').map((p) => [p.type, (p as { text: string }).text])).toEqual([
    ['reasoning', 'Let me think. Done.'],
    ['text', 'The answer is 4.'],
  ])
})

test('a tool call: tool_use streamed as input_json_delta, the result sent back as tool_result', async () => {
  h = await createHarness({ tools: { echo } }, anthropicModelFor)
  h.server.tool('echo', { text: 'ping' }, { id: 'toolu_01', text: 'Calling echo.' })
  h.server.text('done')
  const { result, parts, states } = await run('use echo')
  expect(result.outcome).toBe('completed')
  expect(states).toEqual(['step-gate', 'streaming', 'tool-running', 'streaming', 'completed'])
  const call = parts.find((p): p is ToolPart => p.type === 'tool')!
  expect(call).toMatchObject({ callId: 'toolu_01', tool: 'echo', state: { status: 'completed', input: { text: 'ping' }, output: { echoed: 'ping' } } })
  const first = h.server.requests[0].body
  expect(first.tools).toEqual([expect.objectContaining({ name: 'echo', description: 'Echo the text', input_schema: expect.objectContaining({ required: ['text'] }) })])
  const messages = h.server.requests[1].body.messages
  expect(messages[1]).toEqual({
    role: 'assistant',
    content: [
      { type: 'text', text: 'Calling echo.' },
      { type: 'tool_use', id: 'toolu_01', name: 'echo', input: { text: 'ping' } },
    ],
  })
  expect(messages[2]).toMatchObject({ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_01', content: JSON.stringify({ echoed: 'ping' }) }] })
})

test('parallel tool calls: both run, both results go back in one user message', async () => {
  h = await createHarness({ tools: { echo } }, anthropicModelFor)
  h.server.tools([
    { name: 'echo', input: { text: 'a' }, id: 'toolu_a' },
    { name: 'echo', input: { text: 'b' }, id: 'toolu_b' },
  ])
  h.server.text('both done')
  const { result, parts } = await run()
  expect(result.outcome).toBe('completed')
  expect(parts.filter((p): p is ToolPart => p.type === 'tool').map((p) => [p.callId, p.state.status])).toEqual([
    ['toolu_a', 'completed'],
    ['toolu_b', 'completed'],
  ])
  const results = h.server.requests[1].body.messages[2].content
  expect(results.map((r: { tool_use_id: string }) => r.tool_use_id)).toEqual(['toolu_a', 'toolu_b'])
})

test.each([
  ['529 overloaded_error', 529, anthropicError('overloaded_error', 'Overloaded'), { 'request-id': 'req_011', 'x-should-retry': 'true' }],
  [
    '429 rate_limit_error with retry-after',
    429,
    anthropicError('rate_limit_error', 'This request would exceed the rate limit for your organization of 50 requests per minute.'),
    { 'retry-after': '0', 'anthropic-ratelimit-requests-remaining': '0', 'request-id': 'req_012' },
  ],
  ['500 api_error', 500, anthropicError('api_error', 'Internal server error'), { 'request-id': 'req_013' }],
])('%s is retried, then the turn completes', async (_name, status, body, headers) => {
  h = await createHarness({}, anthropicModelFor)
  h.server.error(status, body, headers)
  h.server.text('recovered')
  const { result, states, parts } = await run()
  expect(result.outcome).toBe('completed')
  expect(states).toEqual(['step-gate', 'streaming', 'retry-waiting', 'streaming', 'completed'])
  expect(parts.find((p) => p.type === 'text')).toMatchObject({ text: 'recovered' })
})

test('an overloaded_error event in the middle of the stream is retried; the half answer is not sent back', async () => {
  h = await createHarness({}, anthropicModelFor)
  h.server.push({ type: 'stream', chunks: [{ text: 'Half an ' }, { raw: JSON.stringify(anthropicError('overloaded_error', 'Overloaded')) }], end: 'hang' })
  h.server.text('whole answer')
  const { result, states } = await run()
  expect(result.outcome).toBe('completed')
  expect(states).toEqual(['step-gate', 'streaming', 'retry-waiting', 'streaming', 'completed'])
  expect(JSON.stringify(h.server.requests[1].body.messages)).not.toContain('Half an')
})

test.each([
  ['401 authentication_error', 401, anthropicError('authentication_error', 'invalid x-api-key'), 'ProviderAuthError'],
  ['400 credit balance too low', 400, anthropicError('invalid_request_error', 'Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits.'), 'APIError'],
  ['400 invalid_request_error', 400, anthropicError('invalid_request_error', 'messages: roles must alternate between "user" and "assistant"'), 'APIError'],
])('%s fails the turn at once, with the provider message', async (_name, status, body, name) => {
  h = await createHarness({}, anthropicModelFor)
  h.server.error(status, body, { 'request-id': 'req_020' })
  const { result, states } = await run()
  expect(result.outcome).toBe('failed')
  expect(states).toEqual(['step-gate', 'streaming', 'failed'])
  expect(result.error).toMatchObject({ name, message: body.error.message })
  expect(h.server.calls).toBe(1)
})

test('400 "prompt is too long" is an overflow: the history is compacted and the step runs again', async () => {
  h = await createHarness({}, anthropicModelFor)
  h.server.error(400, anthropicError('invalid_request_error', 'prompt is too long: 208310 tokens > 200000 maximum'))
  h.server.text('Summary: the user said hi.')
  h.server.text('Hi again')
  const { result, states } = await run()
  expect(result.outcome).toBe('completed')
  expect(states).toEqual(['step-gate', 'streaming', 'compacting', 'step-gate', 'streaming', 'completed'])
  expect(h.server.calls).toBe(3)
})

test('abort mid-stream: the turn ends aborted and keeps the text streamed so far', async () => {
  h = await createHarness({ flushIntervalMs: 0 }, anthropicModelFor)
  h.server.push({ type: 'stream', chunks: [{ text: 'partial ' }, { text: 'answer' }], end: 'hang' })
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'hi')
  await h.waitForEvent((e) => e.type === 'part.delta' && e.delta === 'answer')
  turn.abort()
  expect((await turn.done).outcome).toBe('aborted')
  const text = (await assistantParts(h.engine, session.id)).find((p) => p.type === 'text')
  expect(text).toMatchObject({ text: 'partial answer' })
})

test('thinking signatures and redacted thinking are stored with their parts and sent back on the next request', async () => {
  h = await createHarness({ tools: { echo } }, anthropicModelFor)
  h.server.push({
    type: 'stream',
    chunks: [
      // A redacted thinking block (encrypted by Anthropic's safety systems): no text, only data.
      { raw: JSON.stringify({ type: 'content_block_start', index: 9, content_block: { type: 'redacted_thinking', data: 'EmwKAhgBEgy3va3pzix' } }) },
      { raw: JSON.stringify({ type: 'content_block_stop', index: 9 }) },
      { reasoning: 'The user wants an echo. ' },
      { reasoning: 'I will call it.', signature: 'EqQBCgIYAhIM1gbcDa9GJwZA2b3h' },
      { tool: { name: 'echo', input: { text: 'ping' }, id: 'toolu_01' } },
    ],
  })
  h.server.text('done')
  const { result, parts } = await run('echo ping')
  expect(result.outcome).toBe('completed')
  const reasoning = parts.filter((p) => p.type === 'reasoning')
  expect(reasoning.map((p) => [(p as { text: string }).text, p.type === 'reasoning' ? p.providerMetadata : undefined])).toEqual([
    ['', { anthropic: { redactedData: 'EmwKAhgBEgy3va3pzix' } }],
    ['The user wants an echo. I will call it.', { anthropic: { signature: 'EqQBCgIYAhIM1gbcDa9GJwZA2b3h' } }],
  ])
  // What Anthropic requires with extended thinking and tools: the thinking blocks, unchanged, before the tool_use.
  expect(h.server.requests[1].body.messages[1]).toEqual({
    role: 'assistant',
    content: [
      { type: 'redacted_thinking', data: 'EmwKAhgBEgy3va3pzix' },
      { type: 'thinking', thinking: 'The user wants an echo. I will call it.', signature: 'EqQBCgIYAhIM1gbcDa9GJwZA2b3h' },
      { type: 'tool_use', id: 'toolu_01', name: 'echo', input: { text: 'ping' } },
    ],
  })
})
