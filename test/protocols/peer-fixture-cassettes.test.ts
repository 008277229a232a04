/**
 * Cassettes made from recorded real-provider streams: each chat-completions stream of
 * ../shared/peer-fixtures/vercel-ai (xAI, DeepSeek, Groq, Moonshot, OpenAI, Azure, Alibaba,
 * Perplexity, an Anthropic fallback, and the literal chunks of the AI SDK's openai-compatible
 * tests) is served by the scripted server over loopback, recorded through
 * @ai-sdk/openai-compatible with `recordCassette` into a cassette written at run time, and
 * played back with `cassetteModel` in a fresh engine: the same parts, states and UI stream,
 * with no provider. The fixtures are test data kept outside the repository and never copied
 * into it; without that folder the tests are skipped, saying so.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { jsonSchema, tool, type ToolSet } from 'ai'
import { createOpenAICompatible } from '@ai-sdk/openai-compatible'
import { createEngine, type Engine, type EngineOptions } from '../../src'
import { cassetteModel, comparableParts, readCassette, recordCassette, startScriptedServer, type ScriptedServer } from '../../src/testing'
import { freshDatabase } from '../support/harness'
import { collectUIChunks, comparableChunks } from '../support/ui-chunks'

const root = path.resolve(__dirname, '../..')
const fixtures = path.resolve(root, '../shared/peer-fixtures/vercel-ai')
const available = fs.existsSync(fixtures)
// On stderr, not console.log: jest prints no console output of a file whose tests were all skipped.
if (!available) process.stderr.write(`turnchart: the peer-fixture cassette tests are skipped: ${fixtures} is absent\n`)

/** Each recorded stream as the SSE body a provider sent: `.chunks.txt` (one JSON chunk a line), `.sse`, and the inline cases. */
function streams(): Array<[string, string]> {
  const out: Array<[string, string]> = []
  for (const name of fs.readdirSync(fixtures).sort()) {
    const text = fs.readFileSync(path.join(fixtures, name), 'utf8')
    if (name.endsWith('.chunks.txt')) {
      const lines = text.split('\n').filter((line) => line.trim() !== '')
      out.push([name, `${lines.map((line) => `data: ${line}\n\n`).join('')}data: [DONE]\n\n`])
    } else if (name.endsWith('.sse')) out.push([name, text])
    else if (name.endsWith('.json')) {
      for (const [title, chunks] of Object.entries(JSON.parse(text) as Record<string, string[]>)) out.push([`${name}: ${title}`, chunks.join('')])
    }
  }
  return out
}

/** The tools the stream calls, each answering with a fixed result (any input). */
function toolsOf(body: string): ToolSet {
  const names = new Set([...body.matchAll(/"function"\s*:\s*\{[^{}]*?"name"\s*:\s*"([^"]+)"/g)].map((m) => m[1]))
  return Object.fromEntries(
    [...names].map((name) => [name, tool({ description: `the ${name} tool`, inputSchema: jsonSchema<Record<string, unknown>>({ type: 'object' }), execute: async () => ({ ok: name }) })]),
  )
}

let server: ScriptedServer
let dir: string
const cleanups: Array<() => Promise<void>> = []
beforeEach(async () => {
  server = await startScriptedServer()
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'turnchart-fixture-cassette-'))
})
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup()
  await server?.close()
  fs.rmSync(dir, { recursive: true, force: true })
})

async function runOn(model: EngineOptions['model'], tools: ToolSet) {
  const db = freshDatabase()
  const engine: Engine = await createEngine({ database: db.database, model, tools, retry: { initialDelayMs: 1, maxDelayMs: 5, jitter: 0, maxAttempts: 3 } })
  cleanups.push(async () => {
    await engine.close()
    await db.drop()
  })
  const session = await engine.createSession()
  const turn = engine.prompt(session.id, 'What is the weather in San Francisco?')
  const chunks = collectUIChunks(engine, turn)
  const result = await turn.done
  const messages = (await engine.messages(session.id)).filter((m) => m.info.role === 'assistant')
  return { result, messages, chunks: await chunks, transitions: (await engine.transitions(turn.id)).map((t) => [t.from, t.event, t.to, t.payload]) }
}

const describeFixtures = available ? describe : describe.skip
describeFixtures(`cassettes recorded from the provider streams of ${path.relative(root, fixtures)}`, () => {
  const cases = available ? streams() : [['(absent)', '']]
  test('the fixtures are there to replay', () => {
    expect(cases.length).toBeGreaterThan(30)
  })

  test.each(cases)('%s: recorded over HTTP, replayed from the cassette with the same parts, states and UI stream', async (name, body) => {
    // The recorded stream, then plain answers for the calls after it (a tool's result, a retry).
    server.push({ type: 'raw', status: 200, headers: { 'content-type': 'text/event-stream' }, body })
    for (let i = 0; i < 4; i++) server.text('Done.')
    const tools = toolsOf(body)
    const file = path.join(dir, `${name.replace(/[^\w.-]+/g, '_')}.json`)
    const provider = createOpenAICompatible({ name: 'fixture', baseURL: server.url, apiKey: 'test-key', includeUsage: true })
    const original = await runOn(recordCassette(provider('fixture-model'), { file }), tools)
    const calls = server.calls
    expect(readCassette(file).calls).toHaveLength(calls)

    const replay = cassetteModel(file)
    const rerun = await runOn(replay, tools)
    expect(server.calls).toBe(calls) // no provider call
    expect(replay.callsMade).toBe(calls)
    expect(rerun.result.outcome).toBe(original.result.outcome)
    expect(rerun.transitions).toEqual(original.transitions)
    expect(comparableParts(rerun.messages)).toEqual(comparableParts(original.messages))
    expect(comparableChunks(rerun.chunks)).toEqual(comparableChunks(original.chunks))
  })
})
