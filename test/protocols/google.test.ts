/**
 * The engine's core scenarios against `@ai-sdk/google` (v3, ai v6), through the scripted
 * server's Gemini `streamGenerateContent?alt=sse` protocol: Google's real error bodies
 * (`{ error: { code, message, status, details } }`), thoughts, function calls, and the thought
 * signatures Gemini requires back on the next request.
 */
import { tool } from 'ai'
import { z } from 'zod'
import type { ToolPart } from '../../src'
import { assistantParts, createHarness, googleModelFor, type Harness } from '../support/harness'

let h: Harness
afterEach(async () => {
  await h?.close()
})

const echo = tool({
  description: 'Echo the text',
  inputSchema: z.object({ text: z.string() }),
  execute: async ({ text }) => ({ echoed: text }),
})

const googleError = (code: number, status: string, message: string, details?: unknown[]) => ({ error: { code, message, status, ...(details ? { details } : {}) } })

async function run(prompt = 'hi') {
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, prompt)
  const result = await turn.done
  return { session, turn, result, parts: await assistantParts(h.engine, session.id), states: (await h.engine.transitions(turn.id)).map((t) => t.to) }
}

test('a text turn: the request on the model path, the streamed text and the usage', async () => {
  h = await createHarness({ system: 'Be brief.' }, googleModelFor)
  h.server.text('Hello from Gemini', { usage: { input: 9, output: 6, reasoning: 2 } })
  const { result, parts, session } = await run('hi')
  expect(result.outcome).toBe('completed')
  expect(parts.find((p) => p.type === 'text')).toMatchObject({ text: 'Hello from Gemini' })
  const [request] = h.server.requests
  expect(request.protocol).toBe('google')
  expect(request.headers['x-goog-api-key']).toBe('test-key')
  expect(request.body).toMatchObject({ systemInstruction: { parts: [{ text: 'Be brief.' }] }, contents: [{ role: 'user', parts: [{ text: 'hi' }] }] })
  const [, assistant] = await h.engine.messages(session.id)
  expect(assistant.info.tokens).toMatchObject({ input: 9, output: 6, reasoning: 2 })
})

test('thoughts and text: a reasoning part and a text part', async () => {
  h = await createHarness({}, googleModelFor)
  h.server.push({ type: 'stream', chunks: [{ reasoning: 'Thinking it over.' }, { text: 'The answer ' }, { text: 'is 4.' }] })
  const { result, parts } = await run()
  expect(result.outcome).toBe('completed')
  expect(parts.filter((p) => p.type === 'reasoning' || p.type === 'text').map((p) => [p.type, (p as { text: string }).text])).toEqual([
    ['reasoning', 'Thinking it over.'],
    ['text', 'The answer is 4.'],
  ])
})

test('a function call with a thought signature: the result goes back as functionResponse, the signature with the call', async () => {
  h = await createHarness({ tools: { echo } }, googleModelFor)
  h.server.push({
    type: 'stream',
    chunks: [
      { reasoning: 'I need the echo tool.', signature: 'CiQB0e2Kb7thought' },
      { tool: { name: 'echo', input: { text: 'ping' }, id: 'fc_1', signature: 'CiQB0e2Kb7call' } },
    ],
  })
  h.server.text('done')
  const { result, parts, states } = await run('use echo')
  expect(result.outcome).toBe('completed')
  expect(states).toEqual(['step-gate', 'streaming', 'tool-running', 'streaming', 'completed'])
  const call = parts.find((p): p is ToolPart => p.type === 'tool')!
  expect(call).toMatchObject({ callId: 'fc_1', state: { status: 'completed', output: { echoed: 'ping' } }, providerMetadata: { google: { thoughtSignature: 'CiQB0e2Kb7call' } } })
  expect(parts.find((p) => p.type === 'reasoning')).toMatchObject({ providerMetadata: { google: { thoughtSignature: 'CiQB0e2Kb7thought' } } })
  expect(h.server.requests[0].body.tools).toEqual([{ functionDeclarations: [expect.objectContaining({ name: 'echo', description: 'Echo the text' })] }])
  // What Gemini requires on the follow-up: the model turn's parts with their thought signatures, then the function response.
  const contents = h.server.requests[1].body.contents
  expect(contents[1]).toEqual({
    role: 'model',
    parts: [
      { text: 'I need the echo tool.', thought: true, thoughtSignature: 'CiQB0e2Kb7thought' },
      { functionCall: { id: 'fc_1', name: 'echo', args: { text: 'ping' } }, thoughtSignature: 'CiQB0e2Kb7call' },
    ],
  })
  expect(contents[2]).toMatchObject({ role: 'user', parts: [{ functionResponse: { name: 'echo', response: { name: 'echo', content: { echoed: 'ping' } } } }] })
})

test('parallel function calls: both run, both responses go back', async () => {
  h = await createHarness({ tools: { echo } }, googleModelFor)
  h.server.tools([
    { name: 'echo', input: { text: 'a' }, id: 'fc_a' },
    { name: 'echo', input: { text: 'b' }, id: 'fc_b' },
  ])
  h.server.text('both done')
  const { result, parts } = await run()
  expect(result.outcome).toBe('completed')
  expect(parts.filter((p): p is ToolPart => p.type === 'tool').map((p) => [p.callId, p.state.status])).toEqual([
    ['fc_a', 'completed'],
    ['fc_b', 'completed'],
  ])
  const responses = h.server.requests[1].body.contents[2].parts
  expect(responses.map((r: { functionResponse: { response: { content: unknown } } }) => r.functionResponse.response.content)).toEqual([{ echoed: 'a' }, { echoed: 'b' }])
})

test.each([
  ['503 UNAVAILABLE (overloaded)', 503, googleError(503, 'UNAVAILABLE', 'The model is overloaded. Please try again later.')],
  [
    '429 RESOURCE_EXHAUSTED with RetryInfo',
    429,
    googleError(429, 'RESOURCE_EXHAUSTED', 'You exceeded your current quota, please check your plan and billing details.', [
      { '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '0.02s' },
    ]),
  ],
  ['500 INTERNAL', 500, googleError(500, 'INTERNAL', 'An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting')],
])('%s is retried, then the turn completes', async (_name, status, body) => {
  h = await createHarness({}, googleModelFor)
  h.server.error(status, body)
  h.server.text('recovered')
  const { result, states } = await run()
  expect(result.outcome).toBe('completed')
  expect(states).toEqual(['step-gate', 'streaming', 'retry-waiting', 'streaming', 'completed'])
})

test.each([
  ['400 API key not valid', 400, googleError(400, 'INVALID_ARGUMENT', 'API key not valid. Please pass a valid API key.', [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'API_KEY_INVALID', domain: 'googleapis.com' }])],
  ['403 PERMISSION_DENIED', 403, googleError(403, 'PERMISSION_DENIED', "Method doesn't allow unregistered callers (callers without established identity).")],
  ['429 daily quota without RetryInfo', 429, googleError(429, 'RESOURCE_EXHAUSTED', "Quota exceeded for quota metric 'Generate Content API requests per day' and limit 'GenerateContent request limit per day'.")],
])('%s fails the turn at once', async (_name, status, body) => {
  h = await createHarness({}, googleModelFor)
  h.server.error(status, body)
  const { result, states } = await run()
  expect(result.outcome).toBe('failed')
  expect(states).toEqual(['step-gate', 'streaming', 'failed'])
  expect(result.error).toMatchObject({ message: body.error.message })
  expect(h.server.calls).toBe(1)
})

test('400 input token count exceeds the maximum: an overflow, compacted, then the step runs again', async () => {
  h = await createHarness({}, googleModelFor)
  h.server.error(400, googleError(400, 'INVALID_ARGUMENT', 'The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).'))
  h.server.text('Summary: hi.')
  h.server.text('Hi again')
  const { result, states } = await run()
  expect(result.outcome).toBe('completed')
  expect(states).toEqual(['step-gate', 'streaming', 'compacting', 'step-gate', 'streaming', 'completed'])
})

test('a connection reset mid-stream is retried', async () => {
  h = await createHarness({}, googleModelFor)
  h.server.push({ type: 'stream', chunks: [{ text: 'Half' }], end: 'reset' })
  h.server.text('whole')
  const { result, states } = await run()
  expect(result.outcome).toBe('completed')
  expect(states).toEqual(['step-gate', 'streaming', 'retry-waiting', 'streaming', 'completed'])
})

test('abort mid-stream: the turn ends aborted and keeps the text streamed so far', async () => {
  h = await createHarness({ flushIntervalMs: 0 }, googleModelFor)
  h.server.push({ type: 'stream', chunks: [{ text: 'partial ' }, { text: 'answer' }], end: 'hang' })
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'hi')
  await h.waitForEvent((e) => e.type === 'part.delta' && e.delta === 'answer')
  turn.abort()
  expect((await turn.done).outcome).toBe('aborted')
  expect((await assistantParts(h.engine, session.id)).find((p) => p.type === 'text')).toMatchObject({ text: 'partial answer' })
})

test('a generated image (inlineData) and grounding sources become file and source parts; the image goes back with its turn', async () => {
  h = await createHarness({}, googleModelFor)
  const png = Buffer.from('not really a png').toString('base64')
  const candidate = (parts: unknown[], extra: Record<string, unknown> = {}) => JSON.stringify({ candidates: [{ content: { parts, role: 'model' }, index: 0, ...extra }] })
  h.server.push({
    type: 'stream',
    chunks: [
      { raw: candidate([{ text: 'Here is a drawing, based on ' }], { groundingMetadata: { groundingChunks: [{ web: { uri: 'https://example.com/cats', title: 'Cats' } }] } }) },
      { raw: candidate([{ inlineData: { mimeType: 'image/png', data: png }, thoughtSignature: 'sig-img' }]) },
      { text: 'a cat.' },
    ],
  })
  h.server.text('It is a cat.')
  const session = await h.engine.createSession()
  expect((await h.engine.prompt(session.id, 'draw a cat').done).outcome).toBe('completed')
  const parts = await assistantParts(h.engine, session.id)
  expect(parts.find((p) => p.type === 'file')).toMatchObject({ type: 'file', mediaType: 'image/png', data: png, providerMetadata: { google: { thoughtSignature: 'sig-img' } } })
  expect(parts.find((p) => p.type === 'source')).toMatchObject({ type: 'source', sourceType: 'url', url: 'https://example.com/cats', title: 'Cats' })

  expect((await h.engine.prompt(session.id, 'what is it?').done).outcome).toBe('completed')
  const modelTurn = h.server.requests[1].body.contents[1]
  expect(modelTurn.role).toBe('model')
  expect(modelTurn.parts).toContainEqual({ inlineData: { mimeType: 'image/png', data: png }, thoughtSignature: 'sig-img' })
  expect(JSON.stringify(modelTurn)).not.toContain('example.com') // sources are not sent back
})
