// An app on AI SDK v7 (LanguageModelV4 models, ai 7's tool()) and Node 22, using the built
// turnchart package as installed from its tarball. Run by run.mjs under Node 22: node --test.
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import { after, before, test } from 'node:test'
import { createAnthropic } from '@ai-sdk/anthropic'
import { createGoogleGenerativeAI } from '@ai-sdk/google'
import { createOpenAI } from '@ai-sdk/openai'
import { createOpenAICompatible } from '@ai-sdk/openai-compatible'
import { Output, tool } from 'ai'
import { z } from 'zod'
import { createEngine, InvalidOptionError, StructuredOutputError } from 'turnchart'
import { startScriptedServer } from 'turnchart/testing'

let server
before(async () => {
  server = await startScriptedServer()
})
after(async () => {
  await server.close()
})

function model() {
  return createOpenAICompatible({ name: 'scripted', baseURL: server.url, apiKey: 'test-key', includeUsage: true })('m')
}

async function run(engine, prompt) {
  const session = await engine.createSession()
  const result = await engine.prompt(session.id, prompt).done
  return { result, messages: await engine.messages(session.id) }
}

test('runs on Node 22 with an ai v7 provider, whose models are LanguageModelV4', () => {
  assert.equal(process.versions.node.split('.')[0], '22')
  assert.equal(createRequire(import.meta.url)('ai/package.json').version.split('.')[0], '7')
  assert.equal(model().specificationVersion, 'v4')
})

test('a text turn', async () => {
  assert.equal(server.pending(), 0)
  server.text('hello from ai v7', { usage: { input: 7, output: 4 } })
  const engine = await createEngine({ model: model() })
  try {
    const { result, messages } = await run(engine, 'hi')
    assert.equal(result.outcome, 'completed')
    const assistant = messages[1]
    assert.equal(assistant.parts.find((p) => p.type === 'text').text, 'hello from ai v7')
    assert.deepEqual(assistant.info.tokens, { input: 7, output: 4, reasoning: 0, cache: { read: 0, write: 0 } })
  } finally {
    await engine.close()
  }
})

test("a tool call of a tool made by ai v7's tool() with a zod schema, its result sent back", async () => {
  assert.equal(server.pending(), 0, 'a reply left over by the previous test')
  const calls = server.calls
  server.push({ type: 'stream', chunks: [{ reasoning: 'I should add.' }, { tool: { name: 'add', input: { a: 2, b: 3 }, id: 'call_add' } }] })
  server.text('2 + 3 = 5')
  const add = tool({
    description: 'Add two numbers',
    inputSchema: z.object({ a: z.number(), b: z.number() }),
    execute: async ({ a, b }) => a + b,
  })
  const engine = await createEngine({ model: model(), tools: { add } })
  try {
    const { result, messages } = await run(engine, 'add 2 and 3')
    assert.equal(result.outcome, 'completed', JSON.stringify(result.error))
    const parts = messages[1].parts
    assert.ok(parts.some((p) => p.type === 'reasoning' && p.text === 'I should add.'))
    const toolPart = parts.find((p) => p.type === 'tool')
    assert.equal(toolPart.state.status, 'completed')
    assert.deepEqual(toolPart.state.input, { a: 2, b: 3 })
    assert.equal(toolPart.state.output, 5)
    assert.equal(parts.filter((p) => p.type === 'text').at(-1).text, '2 + 3 = 5')
    // The tool was declared with its JSON schema; the last request carries the call and its result.
    const first = server.requests[calls + 1].body
    assert.equal(first.tools[0].function.name, 'add')
    assert.deepEqual(first.tools[0].function.parameters.required, ['a', 'b'])
    const last = server.requests.at(-1).body
    assert.deepEqual(last.messages.at(-1), { role: 'tool', tool_call_id: 'call_add', content: '5' })
  } finally {
    await engine.close()
  }
})

test('a retryable error (503 overloaded) is retried, then the turn completes', async () => {
  assert.equal(server.pending(), 0, 'a reply left over by the previous test')
  const calls = server.calls
  server.error(503, { error: { message: 'The server is overloaded, try again later', type: 'server_error' } })
  server.text('after the retry')
  const engine = await createEngine({ model: model(), retry: { initialDelayMs: 10, jitter: 0 } })
  try {
    const transitions = []
    engine.subscribe((event) => {
      if (event.type === 'turn.transition') transitions.push(event.to)
    })
    const { result, messages } = await run(engine, 'hi')
    assert.equal(result.outcome, 'completed')
    assert.equal(server.calls - calls, 2)
    assert.ok(transitions.includes('retry-waiting'), transitions.join(' '))
    assert.equal(messages[1].parts.filter((p) => p.type === 'text').at(-1).text, 'after the retry')
  } finally {
    await engine.close()
  }
})

test("structured output with ai v7's Output.object: a tool call, then an answer sent back once for its schema, then the object", async () => {
  assert.equal(server.pending(), 0, 'a reply left over by the previous test')
  const calls = server.calls
  server.tool('weather', { city: 'Paris' }, { id: 'call_weather' })
  server.text('{"city":"Paris"}')
  server.text('{"city":"Paris","celsius":21}')
  const weather = tool({ description: 'Weather', inputSchema: z.object({ city: z.string() }), execute: async ({ city }) => ({ city, celsius: 21 }) })
  const engine = await createEngine({ model: model(), tools: { weather } })
  try {
    const session = await engine.createSession()
    const output = Output.object({ schema: z.object({ city: z.string(), celsius: z.number() }) })
    const result = await engine.prompt(session.id, 'weather in Paris?', { output }).done
    assert.equal(result.outcome, 'completed', JSON.stringify(result.error))
    assert.deepEqual(result.output, { city: 'Paris', celsius: 21 })
    assert.equal(server.calls - calls, 3)
    assert.ok(server.requests.slice(calls).every((r) => r.body.response_format?.type === 'json_object'))
    assert.match(JSON.stringify(server.requests.at(-1).body.messages.at(-1)), /does not match the required output schema: celsius/)
    const log = (await engine.transitions(result.turnId)).map((t) => t.event).slice(-3)
    assert.deepEqual(log, ['output.retry', 'step.finished', 'gate.complete'])
  } finally {
    await engine.close()
  }
})

test('structured output with ai v7: a schema failure twice fails the turn with StructuredOutputError', async () => {
  assert.equal(server.pending(), 0, 'a reply left over by the previous test')
  server.text('{"city":1}')
  server.text('{"city":2}')
  const engine = await createEngine({ model: model(), output: Output.object({ schema: z.object({ city: z.string() }) }) })
  try {
    const session = await engine.createSession()
    const result = await engine.prompt(session.id, 'a city').done
    assert.equal(result.outcome, 'failed')
    assert.ok(StructuredOutputError.isInstance(result.error))
    assert.equal(result.error.text, '{"city":2}')
    assert.deepEqual(result.error.reasons, ['city: Invalid input: expected string, received number'])
    assert.equal(result.error.aiSdkError.name, 'AI_NoObjectGeneratedError')
  } finally {
    await engine.close()
  }
})

test('a model id string is refused by createEngine, naming the versions supported', async () => {
  const error = await createEngine({ model: 'openai/gpt-5' }).catch((e) => e)
  assert.ok(InvalidOptionError.isInstance(error))
  assert.equal(error.option, 'model')
  assert.match(error.message, /'v3' or 'v4'/)
})

test('the CommonJS entry (require) runs a turn too, with the ES-module-only ai v7', async () => {
  assert.equal(server.pending(), 0, 'a reply left over by the previous test')
  const cjs = createRequire(import.meta.url)('turnchart')
  server.text('hello from require')
  const engine = await cjs.createEngine({ model: model() })
  try {
    const { result, messages } = await run(engine, 'hi')
    assert.equal(result.outcome, 'completed')
    assert.equal(messages[1].parts.find((p) => p.type === 'text').text, 'hello from require')
  } finally {
    await engine.close()
  }
})

// The Restate SDK ships a CommonJS and an ES module build, and each build's endpoint knows only its
// own handlers: turnchart/restate's object must be made with the build the app serves it with.
test('turnchart/restate, imported and required: its object is served by the Restate SDK endpoint of the same module system', async () => {
  process.env.RESTATE_LOGGING = 'ERROR' // (the SDK's warning that an endpoint with no identity keys accepts any request)
  const esm = { turnchart: await import('turnchart/restate'), sdk: await import('@restatedev/restate-sdk') }
  const require = createRequire(import.meta.url)
  const cjs = { turnchart: require('turnchart/restate'), sdk: require('@restatedev/restate-sdk') }
  for (const [system, { turnchart, sdk }] of Object.entries({ esm, cjs })) {
    const service = turnchart.createRestateService({ database: ':memory:', model: model() })
    assert.doesNotThrow(() => sdk.createEndpointHandler({ services: [service] }), `${system}: the endpoint refused the object`)
    await service.close()
  }
})

// The v7 providers of the other protocols: a two-step tool turn whose second request carries
// the first step's signatures or item references, and a retried provider error.
const protocols = [
  {
    name: '@ai-sdk/anthropic (Messages)',
    model: () => createAnthropic({ baseURL: server.url, apiKey: 'test-key' })('claude-test'),
    overloaded: [529, { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }],
    followUp: (body) => body.messages[1].content[0],
    expected: { type: 'thinking', thinking: 'I should echo.', signature: 'sig-v7' },
  },
  {
    name: '@ai-sdk/google (streamGenerateContent)',
    model: () => createGoogleGenerativeAI({ baseURL: server.url, apiKey: 'test-key' })('gemini-test'),
    overloaded: [503, { error: { code: 503, message: 'The model is overloaded. Please try again later.', status: 'UNAVAILABLE' } }],
    followUp: (body) => body.contents[1].parts[0],
    expected: { text: 'I should echo.', thought: true, thoughtSignature: 'sig-v7' },
  },
  {
    name: '@ai-sdk/openai (Responses)',
    model: () => createOpenAI({ baseURL: server.url, apiKey: 'test-key' }).responses('gpt-test'),
    overloaded: [503, { error: { message: 'The engine is currently overloaded, please try again later', type: 'server_error', param: null, code: null } }],
    followUp: (body) => body.input[1],
    expected: { type: 'item_reference' },
  },
]

for (const protocol of protocols) {
  test(`${protocol.name} v7: a retried error, then a tool turn whose next request carries the signature`, async () => {
    assert.equal(server.pending(), 0, 'a reply left over by the previous test')
    const model = protocol.model()
    assert.equal(model.specificationVersion, 'v4')
    const calls = server.calls
    server.error(...protocol.overloaded)
    server.push({ type: 'stream', chunks: [{ reasoning: 'I should echo.', signature: 'sig-v7' }, { tool: { name: 'echo', input: { text: 'ping' }, id: 'call_v7' } }] })
    server.text('done')
    const echo = tool({ description: 'Echo the text', inputSchema: z.object({ text: z.string() }), execute: async ({ text }) => ({ echoed: text }) })
    const engine = await createEngine({ model, tools: { echo }, retry: { initialDelayMs: 10, jitter: 0 } })
    try {
      const { result, messages } = await run(engine, 'echo ping')
      assert.equal(result.outcome, 'completed', JSON.stringify(result.error))
      assert.equal(server.calls - calls, 3)
      const toolPart = messages[1].parts.find((p) => p.type === 'tool')
      assert.equal(toolPart.state.status, 'completed')
      assert.deepEqual(toolPart.state.output, { echoed: 'ping' })
      const followUp = protocol.followUp(server.requests.at(-1).body)
      for (const [key, value] of Object.entries(protocol.expected)) assert.deepEqual(followUp[key], value, JSON.stringify(followUp))
    } finally {
      await engine.close()
    }
  })
}

test('@ai-sdk/google v7: a generated image is stored as a file part and goes back with its turn (V4 file data)', async () => {
  assert.equal(server.pending(), 0, 'a reply left over by the previous test')
  const png = Buffer.from('not really a png').toString('base64')
  server.push({ type: 'stream', chunks: [{ raw: JSON.stringify({ candidates: [{ content: { parts: [{ inlineData: { mimeType: 'image/png', data: png } }], role: 'model' }, index: 0 }] }) }, { text: 'A cat.' }] })
  server.text('It is a cat.')
  const engine = await createEngine({ model: createGoogleGenerativeAI({ baseURL: server.url, apiKey: 'test-key' })('gemini-test') })
  try {
    const session = await engine.createSession()
    assert.equal((await engine.prompt(session.id, 'draw a cat').done).outcome, 'completed')
    const [, assistant] = await engine.messages(session.id)
    const file = assistant.parts.find((p) => p.type === 'file')
    assert.deepEqual([file.mediaType, file.data], ['image/png', png])
    assert.equal((await engine.prompt(session.id, 'what is it?').done).outcome, 'completed')
    assert.deepEqual(server.requests.at(-1).body.contents[1].parts[0], { inlineData: { mimeType: 'image/png', data: png } })
  } finally {
    await engine.close()
  }
})
