/**
 * Cassettes on each wire protocol: a turn through @ai-sdk/anthropic, @ai-sdk/google and
 * @ai-sdk/openai (Responses) against the scripted server over loopback, recorded with
 * `recordCassette`, then played back with `cassetteModel` in a fresh engine: the same parts
 * (provider metadata included), states and UI stream, with no provider call.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { tool } from 'ai'
import { z } from 'zod'
import { createEngine, type Engine, type EngineOptions } from '../../src'
import { cassetteModel, comparableParts, recordCassette, startScriptedServer, type ScriptedServer } from '../../src/testing'
import { anthropicModelFor, freshDatabase, googleModelFor, openaiResponsesModelFor } from '../support/harness'
import { collectUIChunks, comparableChunks } from '../support/ui-chunks'

let server: ScriptedServer
let dir: string
const cleanups: Array<() => Promise<void>> = []
beforeEach(async () => {
  server = await startScriptedServer()
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'turnchart-protocol-cassette-'))
})
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup()
  await server.close()
  fs.rmSync(dir, { recursive: true, force: true })
})

const add = tool({ description: 'Add two numbers', inputSchema: z.object({ a: z.number(), b: z.number() }), execute: async ({ a, b }) => ({ sum: a + b }) })

async function run(model: EngineOptions['model']) {
  const db = freshDatabase()
  const engine: Engine = await createEngine({ database: db.database, model, tools: { add }, retry: { initialDelayMs: 1, maxDelayMs: 5, jitter: 0 } })
  cleanups.push(async () => {
    await engine.close()
    await db.drop()
  })
  const session = await engine.createSession()
  const turn = engine.prompt(session.id, 'What is 1+2?')
  const chunks = collectUIChunks(engine, turn)
  const result = await turn.done
  const messages = (await engine.messages(session.id)).filter((m) => m.info.role === 'assistant')
  return { result, messages, chunks: await chunks, transitions: (await engine.transitions(turn.id)).map((t) => [t.from, t.event, t.to, t.payload]) }
}

test.each([
  ['Anthropic Messages', anthropicModelFor],
  ['Gemini streamGenerateContent', googleModelFor],
  ['OpenAI Responses', openaiResponsesModelFor],
])('%s: reasoning with its signature, a tool call, a retried 500, recorded and played back identically', async (_name, modelFor) => {
  server.push({ type: 'stream', chunks: [{ reasoning: 'I will add.', signature: 'sig-1' }, { tool: { name: 'add', input: { a: 1, b: 2 }, id: 'call_1' } }] })
  server.error(500, { error: { message: 'Internal server error', type: 'api_error' } })
  server.text('It is 3.')
  const file = path.join(dir, 'cassette.json')
  const original = await run(recordCassette(modelFor(server), { file }))
  expect(original.result.outcome).toBe('completed')
  expect(original.transitions.map((t) => t[2])).toEqual(['step-gate', 'streaming', 'tool-running', 'streaming', 'retry-waiting', 'streaming', 'completed'])
  expect(server.calls).toBe(3)

  const replay = cassetteModel(file)
  const rerun = await run(replay)
  expect(server.calls).toBe(3)
  expect(replay.callsMade).toBe(3)
  expect(rerun.transitions).toEqual(original.transitions)
  expect(comparableParts(rerun.messages)).toEqual(comparableParts(original.messages))
  expect(comparableParts(rerun.messages).some((p) => p.providerMetadata !== undefined)).toBe(true)
  expect(comparableChunks(rerun.chunks)).toEqual(comparableChunks(original.chunks))
})
