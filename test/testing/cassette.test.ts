/**
 * Cassettes: `recordCassette` wraps a real model talking HTTP (the scripted server over
 * loopback, through @ai-sdk/openai-compatible) and writes each call to a JSON file;
 * `cassetteModel(file)` plays it back in a fresh engine with no provider.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { tool } from 'ai'
import { createOpenAICompatible } from '@ai-sdk/openai-compatible'
import { z } from 'zod'
import { createEngine, RecordingDivergedError, type Engine, type EngineOptions, type MessageWithParts } from '../../src'
import { CassetteFormatError, cassetteModel, comparableParts, readCassette, recordCassette, startScriptedServer, type ScriptedServer } from '../../src/testing'
import { freshDatabase } from '../support/harness'
import { collectUIChunks, comparableChunks } from '../support/ui-chunks'

const apiKey = 'sk-test-0123456789abcdefghij'
let server: ScriptedServer
let dir: string
const cleanups: Array<() => Promise<void>> = []

beforeEach(async () => {
  server = await startScriptedServer()
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'turnchart-cassette-'))
})
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup()
  await server.close()
  fs.rmSync(dir, { recursive: true, force: true })
})

const add = tool({ description: 'Add two numbers', inputSchema: z.object({ a: z.number(), b: z.number() }), execute: async ({ a, b }) => ({ sum: a + b }) })
const options = {
  system: 'You add numbers.',
  tools: { add },
  limits: { context: 1000, output: 100 },
  retry: { initialDelayMs: 1, maxDelayMs: 5, jitter: 0 },
} satisfies Partial<EngineOptions>

async function engineWith(model: EngineOptions['model'], extra: Partial<EngineOptions> = {}): Promise<Engine> {
  const db = freshDatabase()
  const engine = await createEngine({ database: db.database, model, ...options, ...extra })
  cleanups.push(async () => {
    await engine.close()
    await db.drop()
  })
  return engine
}

async function run(engine: Engine, prompt: string, promptOptions: { headers?: Record<string, string> } = {}) {
  const session = await engine.createSession()
  const turn = engine.prompt(session.id, prompt, promptOptions)
  const chunks = collectUIChunks(engine, turn)
  const result = await turn.done
  const messages = (await engine.messages(session.id)).filter((m: MessageWithParts) => m.info.role === 'assistant')
  return { result, chunks: await chunks, messages, states: (await engine.transitions(turn.id)).map((t) => t.to) }
}

const httpModel = () => createOpenAICompatible({ name: 'lab', baseURL: server.url, apiKey, includeUsage: true })('lab-model')

test('a cassette recorded from a real HTTP provider replays identically in a fresh engine with no provider, and holds nothing secret', async () => {
  server.push({
    type: 'stream',
    chunks: [{ reasoning: 'I will add.' }, { text: 'Adding.' }, { tool: { name: 'add', input: { a: 1, b: 2 }, id: 'call_1' } }],
    usage: { input: 100, output: 10, reasoning: 4 },
    headers: { 'set-cookie': 'session=abc123secret', 'x-request-id': 'req_1' },
  })
  // A provider error that echoes the key it was sent, with a retry delay.
  server.error(429, { error: { message: `Rate limit reached for key ${apiKey}`, type: 'rate_limit_error' } }, { 'retry-after-ms': '5', 'set-cookie': 'x=1' })
  server.push({ type: 'stream', chunks: [{ text: 'And again.' }, { tool: { name: 'add', input: { a: 3, b: 4 }, id: 'call_2' } }], usage: { input: 950, output: 20 } })
  server.text('Summary: two sums.', { usage: { input: 40, output: 5 } })
  server.text('3 and 7.', { usage: { input: 50, output: 4 } })
  const file = path.join(dir, 'add.json')
  const recording = recordCassette(httpModel(), { file, secrets: [apiKey] })
  const original = await run(await engineWith(recording), 'Add 1+2, then 3+4.', { headers: { authorization: `Bearer ${apiKey}`, 'x-trace': 'trace-1' } })
  expect(original.result.outcome).toBe('completed')
  expect(original.states).toEqual(['step-gate', 'streaming', 'tool-running', 'streaming', 'retry-waiting', 'streaming', 'tool-running', 'compacting', 'step-gate', 'streaming', 'completed'])
  expect(server.calls).toBe(5)

  const text = fs.readFileSync(file, 'utf8')
  expect(text).not.toContain(apiKey)
  expect(text).not.toContain('abc123secret')
  expect(text).not.toContain('set-cookie')
  const cassette = readCassette(file)
  expect(cassette.model).toEqual({ provider: 'lab.chat', modelId: 'lab-model', specificationVersion: 'v3' })
  expect(cassette.calls).toHaveLength(5)
  expect(cassette.calls[0].request.headers).toEqual({ authorization: '[redacted]', 'x-trace': 'trace-1' })
  expect(cassette.calls[0].request.prompt).toEqual([
    { role: 'system', content: 'You add numbers.' },
    { role: 'user', content: [{ type: 'text', text: 'Add 1+2, then 3+4.' }] },
  ])
  expect(cassette.calls[0].request.tools).toEqual([expect.objectContaining({ type: 'function', name: 'add', description: 'Add two numbers' })])
  expect(cassette.calls[0].response).toMatchObject({ headers: { 'x-request-id': 'req_1', 'content-type': 'text/event-stream' }, end: 'close' })
  expect(cassette.calls[1].error).toMatchObject({ apiCall: { statusCode: 429, isRetryable: true, responseHeaders: { 'retry-after-ms': '5' } } })
  expect(cassette.calls[1].error?.apiCall?.responseBody).toContain('Rate limit reached for key [redacted]')

  const replay = cassetteModel(file, { secrets: [apiKey] })
  const rerun = await run(await engineWith(replay), 'Add 1+2, then 3+4.', { headers: { authorization: `Bearer ${apiKey}`, 'x-trace': 'trace-1' } })
  expect(server.calls).toBe(5) // no provider call
  expect(replay.callsMade).toBe(5)
  expect(rerun.states).toEqual(original.states)
  expect(rerun.result.usage.tokens).toEqual(original.result.usage.tokens)
  expect(comparableParts(rerun.messages)).toEqual(comparableParts(original.messages))
  expect(comparableChunks(rerun.chunks)).toEqual(comparableChunks(original.chunks))
})

test('a run that diverges from its cassette fails with RecordingDivergedError naming the call and the difference', async () => {
  server.tool('add', { a: 1, b: 2 }, { id: 'call_1' })
  server.text('3')
  const file = path.join(dir, 'one.json')
  await run(await engineWith(recordCassette(httpModel(), { file })), 'Add 1+2.')
  const broken = tool({ description: 'Add two numbers', inputSchema: z.object({ a: z.number(), b: z.number() }), execute: async () => ({ sum: 4 }) })
  const rerun = await run(await engineWith(cassetteModel(file), { tools: { add: broken } }), 'Add 1+2.')
  expect(rerun.result.outcome).toBe('failed')
  expect(RecordingDivergedError.isInstance(rerun.result.error)).toBe(true)
  expect(rerun.result.error).toMatchObject({
    recording: `cassette ${file}`,
    call: 2,
    reason: 'message 3 (tool) differs: the result of tool call call_1 (add) differs: recorded {"sum":3}, now {"sum":4}',
  })
})

test('an abort mid-stream is recorded where it happened; the replay stops there too and the run can abort it', async () => {
  server.push({ type: 'stream', chunks: [{ text: 'A long ' }, { text: 'answer' }], end: 'hang' })
  const file = path.join(dir, 'abort.json')
  const engine = await engineWith(recordCassette(httpModel(), { file }))
  const session = await engine.createSession()
  const turn = engine.prompt(session.id, 'Write a lot.')
  await new Promise<void>((resolve) => {
    const off = engine.subscribe((event) => {
      if (event.type === 'part.delta' && event.delta === 'answer') {
        off()
        resolve()
      }
    })
  })
  turn.abort()
  expect((await turn.done).outcome).toBe('aborted')
  expect(readCassette(file).calls[0].response?.end).toBe('cancel')

  const replayEngine = await engineWith(cassetteModel(file))
  const replaySession = await replayEngine.createSession()
  const replayed = replayEngine.prompt(replaySession.id, 'Write a lot.')
  await new Promise<void>((resolve) => {
    const off = replayEngine.subscribe((event) => {
      if (event.type === 'part.delta' && event.delta.includes('answer')) {
        off()
        resolve()
      }
    })
  })
  replayed.abort()
  expect((await replayed.done).outcome).toBe('aborted')
  const [, answer] = await replayEngine.messages(replaySession.id)
  expect(answer.parts.find((p) => p.type === 'text')).toMatchObject({ text: 'A long answer' })
})

test('a file that is not a cassette is a CassetteFormatError saying why', () => {
  const file = path.join(dir, 'not.json')
  fs.writeFileSync(file, '{"hello": 1}')
  expect(() => cassetteModel(file)).toThrow(CassetteFormatError)
  expect(() => cassetteModel(file)).toThrow(`${file} is not a turnchart cassette: its "format" is not "turnchart-cassette"`)
  expect(() => cassetteModel(path.join(dir, 'missing.json'))).toThrow(/cannot be read \(ENOENT\)/)
})
