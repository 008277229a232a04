// An app on AI SDK v7 (LanguageModelV4 models, ai 7's tool()) and Node 22, using the built
// turnchart package as installed from its tarball. Run by run.mjs under Node 22: node --test.
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import { after, before, test } from 'node:test'
import { createOpenAICompatible } from '@ai-sdk/openai-compatible'
import { tool } from 'ai'
import { z } from 'zod'
import { createEngine, InvalidOptionError } from 'turnchart'
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
