/**
 * `recordedModel(engine, turnId)`: a stored turn re-run in a fresh engine from its recorded
 * responses, with no provider. The original turns run through the scripted server over
 * loopback (the real AI SDK providers), the re-runs on fresh SQLite files.
 */
import { tool } from 'ai'
import { z } from 'zod'
import { createEngine, RecordingDivergedError, type Engine, type EngineOptions, type MessageWithParts } from '../../src'
import { comparableParts } from '../../src/testing/comparable-parts'
import { recordedModel } from '../../src/testing'
import { anthropicModelFor, createHarness, freshDatabase, googleModelFor, type Harness } from '../support/harness'
import { collectUIChunks, comparableChunks } from '../support/ui-chunks'

let h: Harness
const cleanups: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup()
  await h?.close()
})

/** A tool whose result the test decides (`add` really adds unless told otherwise). */
function addTool(offset = 0) {
  return tool({
    description: 'Add two numbers',
    inputSchema: z.object({ a: z.number(), b: z.number() }),
    execute: async ({ a, b }) => ({ sum: a + b + offset }),
  })
}

const engineOptions = {
  system: 'You add numbers.',
  limits: { context: 1000, output: 100 },
  retry: { initialDelayMs: 1, maxDelayMs: 5, jitter: 0 },
} satisfies Partial<EngineOptions>

/** A fresh engine on a fresh SQLite file, closed after the test. */
async function freshEngine(options: Partial<EngineOptions> & Pick<EngineOptions, 'model'>): Promise<Engine> {
  const db = freshDatabase()
  const engine = await createEngine({ database: db.database, ...engineOptions, ...options })
  cleanups.push(async () => {
    await engine.close()
    await db.drop()
  })
  return engine
}

async function runPrompt(engine: Engine, prompt: string) {
  const session = await engine.createSession()
  const turn = engine.prompt(session.id, prompt)
  const chunks = collectUIChunks(engine, turn)
  const result = await turn.done
  const messages = await engine.messages(session.id)
  return { turn, result, chunks: await chunks, messages, transitions: await engine.transitions(turn.id) }
}

const answers = (messages: MessageWithParts[]) => messages.filter((m) => m.info.role === 'assistant')

/** The script: reasoning, text and a tool call; a 429; text and a tool call that fill the context; the summary; the answer. */
function scriptAMultiStepTurn(server: Harness['server']) {
  server.push({
    type: 'stream',
    chunks: [{ reasoning: 'I should ' }, { reasoning: 'add them.' }, { text: 'Let me ' }, { text: 'add.' }, { tool: { name: 'add', input: { a: 1, b: 2 }, id: 'call_1' } }],
    usage: { input: 100, output: 10, reasoning: 3, cacheRead: 40 },
  })
  server.error(429, { error: { message: 'Rate limit reached for requests', type: 'rate_limit_error' } }, { 'retry-after-ms': '5' })
  server.push({ type: 'stream', chunks: [{ text: 'And ' }, { text: 'again.' }, { tool: { name: 'add', input: { a: 3, b: 4 }, id: 'call_2' } }], usage: { input: 950, output: 20 } })
  server.text('Summary: 1+2 and 3+4 were added.', { usage: { input: 50, output: 8 } })
  server.text('The sums are 3 and 7.', { usage: { input: 60, output: 9 } })
}

test('a multi-step turn (tools, reasoning, a 429 retried, a compaction) re-runs in a fresh engine with no provider: the same parts, states and UI stream', async () => {
  h = await createHarness({ ...engineOptions, tools: { add: addTool() } })
  scriptAMultiStepTurn(h.server)
  const original = await runPrompt(h.engine, 'Add 1+2, then 3+4.')
  expect(original.result.outcome).toBe('completed')
  const states = original.transitions.map((t) => t.to)
  expect(states).toEqual(['step-gate', 'streaming', 'tool-running', 'streaming', 'retry-waiting', 'streaming', 'tool-running', 'compacting', 'step-gate', 'streaming', 'completed'])
  expect(h.server.calls).toBe(5)

  const model = await recordedModel(h.engine, original.turn.id)
  expect(model.specificationVersion).toBe('v3')
  expect(model.calls.map((c) => `${c.kind} ${c.step}.${c.attempt} ${c.outcome.type}`)).toEqual([
    'step 1.1 finished',
    'step 2.1 failed',
    'step 2.2 finished',
    'summary 2.1 finished',
    'step 3.1 finished',
  ])
  const rerunEngine = await freshEngine({ model, tools: { add: addTool() } })
  const rerun = await runPrompt(rerunEngine, 'Add 1+2, then 3+4.')

  expect(h.server.calls).toBe(5) // no provider call
  expect(model.callsMade).toBe(5)
  expect(rerun.result).toMatchObject({ outcome: 'completed', text: 'The sums are 3 and 7.' })
  expect(rerun.result.usage.tokens).toEqual(original.result.usage.tokens)
  expect(rerun.transitions.map((t) => [t.from, t.event, t.to])).toEqual(original.transitions.map((t) => [t.from, t.event, t.to]))
  // The 429 as stored: the same record, the same wait.
  expect(rerun.transitions[3].payload).toEqual(original.transitions[3].payload)
  expect(comparableParts(answers(rerun.messages))).toEqual(comparableParts(answers(original.messages)))
  expect(comparableParts(answers(rerun.messages)).length).toBeGreaterThan(10)
  expect(answers(rerun.messages).map((m) => [m.info.summary ?? false, m.info.tokens, m.info.finish])).toEqual(
    answers(original.messages).map((m) => [m.info.summary ?? false, m.info.tokens, m.info.finish]),
  )
  expect(comparableChunks(rerun.chunks)).toEqual(comparableChunks(original.chunks))
  expect(comparableChunks(rerun.chunks).map((c) => c.type)).toEqual(expect.arrayContaining(['reasoning-delta', 'tool-output-available', 'data-compaction', 'finish']))
})

test('reasoning with provider metadata (Anthropic thinking signatures) comes back with its metadata, and is sent back as the recording sent it', async () => {
  h = await createHarness({ ...engineOptions, tools: { add: addTool() } }, anthropicModelFor)
  h.server.push({ type: 'stream', chunks: [{ reasoning: 'Adding. ' }, { reasoning: 'Done.', signature: 'sig-1' }, { tool: { name: 'add', input: { a: 1, b: 2 }, id: 'toolu_1' } }] })
  h.server.text('It is 3.')
  const original = await runPrompt(h.engine, 'What is 1+2?')
  const reasoning = answers(original.messages)[0].parts.find((p) => p.type === 'reasoning')
  expect(reasoning).toMatchObject({ text: 'Adding. Done.', providerMetadata: { anthropic: { signature: 'sig-1' } } })

  const model = await recordedModel(h.engine, original.turn.id)
  const rerun = await runPrompt(await freshEngine({ model, tools: { add: addTool() } }), 'What is 1+2?')
  expect(rerun.result.outcome).toBe('completed')
  expect(comparableParts(answers(rerun.messages))).toEqual(comparableParts(answers(original.messages)))
  expect(h.server.calls).toBe(2)
})

test('Gemini thought signatures on tool calls come back with the calls', async () => {
  h = await createHarness({ ...engineOptions, tools: { add: addTool() } }, googleModelFor)
  h.server.push({ type: 'stream', chunks: [{ reasoning: 'Let me add.', signature: 'thought-1' }, { tool: { name: 'add', input: { a: 2, b: 2 }, signature: 'thought-2' } }] })
  h.server.text('4')
  const original = await runPrompt(h.engine, 'What is 2+2?')
  const call = answers(original.messages)[0].parts.find((p) => p.type === 'tool')
  expect(call?.providerMetadata).toEqual({ google: { thoughtSignature: 'thought-2' } })

  const model = await recordedModel(h.engine, original.turn.id)
  const rerun = await runPrompt(await freshEngine({ model, tools: { add: addTool() } }), 'What is 2+2?')
  expect(rerun.result.outcome).toBe('completed')
  expect(comparableParts(answers(rerun.messages))).toEqual(comparableParts(answers(original.messages)))
})

test('a run whose tool returns another result fails at the next step with RecordingDivergedError naming the step and the result', async () => {
  h = await createHarness({ ...engineOptions, tools: { add: addTool() } })
  scriptAMultiStepTurn(h.server)
  const original = await runPrompt(h.engine, 'Add 1+2, then 3+4.')
  const model = await recordedModel(h.engine, original.turn.id)
  const rerun = await runPrompt(await freshEngine({ model, tools: { add: addTool(100) } }), 'Add 1+2, then 3+4.')

  expect(rerun.result.outcome).toBe('failed')
  const error = rerun.result.error
  if (!RecordingDivergedError.isInstance(error)) throw new Error(`expected a RecordingDivergedError, got ${error?.name}`)
  expect(error).toMatchObject({ call: 2, step: 2, attempt: 1, kind: 'step' })
  expect(error.reason).toBe('message 3 (tool) differs: the result of tool call call_1 (add) differs: recorded {"sum":3}, now {"sum":103}')
  expect(error?.message).toContain(`the run left the recording of turn ${original.turn.id} at step 2, model call 2`)
  // Not retried: the recording cannot answer it however often it is asked.
  expect(rerun.transitions.map((t) => t.to)).toEqual(['step-gate', 'streaming', 'tool-running', 'streaming', 'failed'])
})

test('a run that takes more steps than the recording fails at the first step the recording does not have', async () => {
  h = await createHarness({ ...engineOptions, tools: { add: addTool() }, maxSteps: 1 })
  h.server.tool('add', { a: 1, b: 2 }, { id: 'call_1' })
  const original = await runPrompt(h.engine, 'Add 1+2.')
  expect(original.result.error).toMatchObject({ name: 'StepLimitError' })

  const model = await recordedModel(h.engine, original.turn.id)
  const rerun = await runPrompt(await freshEngine({ model, tools: { add: addTool() }, maxSteps: 5 }), 'Add 1+2.')
  expect(rerun.result.error).toMatchObject({ name: 'RecordingDivergedError', call: 2, step: 2 })
  expect(rerun.result.error?.reason).toMatch(/^the recording has 1 model calls: its turn ended there as failed \(StepLimitError: /)
})

test('another system prompt is a divergence at step 1', async () => {
  h = await createHarness(engineOptions)
  h.server.text('Hello.')
  const original = await runPrompt(h.engine, 'hi')
  const model = await recordedModel(h.engine, original.turn.id)
  const rerun = await runPrompt(await freshEngine({ model, system: 'You are a pirate.' }), 'hi')
  expect(rerun.result.error).toMatchObject({
    name: 'RecordingDivergedError',
    step: 1,
    reason: 'the system prompt differs: recorded "You add numbers.", now "You are a pirate."',
  })
})

test('a stored failure that ended the turn fails the re-run the same way: a 401 is not retried, its record is the same', async () => {
  h = await createHarness(engineOptions)
  h.server.error(401, { error: { message: 'Incorrect API key provided', type: 'invalid_request_error', code: 'invalid_api_key' } }, { 'x-request-id': 'req_1' })
  const original = await runPrompt(h.engine, 'hi')
  expect(original.result.outcome).toBe('failed')
  const model = await recordedModel(h.engine, original.turn.id)
  const rerun = await runPrompt(await freshEngine({ model }), 'hi')
  expect(rerun.result.outcome).toBe('failed')
  expect(rerun.result.error?.toJSON()).toEqual(original.result.error?.toJSON())
  expect(comparableChunks(rerun.chunks)).toEqual(comparableChunks(original.chunks))
})

test('a reset in the middle of a stream, and a stream that ends with nothing: retried again, the half answer kept as it was', async () => {
  h = await createHarness(engineOptions)
  h.server.push({ type: 'stream', chunks: [{ text: 'Half an ' }], end: 'reset' })
  h.server.push({ type: 'stream', chunks: [], end: 'close' })
  h.server.text('A whole answer.')
  const original = await runPrompt(h.engine, 'hi')
  expect(original.transitions.map((t) => t.to)).toEqual(['step-gate', 'streaming', 'retry-waiting', 'streaming', 'retry-waiting', 'streaming', 'completed'])
  const model = await recordedModel(h.engine, original.turn.id)
  const rerun = await runPrompt(await freshEngine({ model }), 'hi')
  expect(rerun.transitions.map((t) => [t.to, t.payload])).toEqual(original.transitions.map((t) => [t.to, t.payload]))
  expect(comparableParts(answers(rerun.messages))).toEqual(comparableParts(answers(original.messages)))
  expect(comparableChunks(rerun.chunks)).toEqual(comparableChunks(original.chunks))
})

test('an unknown turn is a TurnNotFoundError', async () => {
  h = await createHarness(engineOptions)
  await expect(recordedModel(h.engine, 'trn_missing')).rejects.toMatchObject({ name: 'TurnNotFoundError' })
})

test('a failed summary request is retried as recorded, and the model answers as a LanguageModelV4 when asked', async () => {
  h = await createHarness(engineOptions)
  h.server.error(400, { error: { message: "This model's maximum context length is 1000 tokens.", type: 'invalid_request_error', code: 'context_length_exceeded' } })
  h.server.error(503, { error: { message: 'Service Unavailable', type: 'server_error' } })
  h.server.text('Summary: the user said hi.', { usage: { input: 30, output: 6 } })
  h.server.text('Hi again.')
  const original = await runPrompt(h.engine, 'hi')
  expect(original.transitions.map((t) => t.to)).toEqual(['step-gate', 'streaming', 'compacting', 'compaction-retry-waiting', 'compacting', 'step-gate', 'streaming', 'completed'])

  const model = await recordedModel(h.engine, original.turn.id, { specificationVersion: 'v4' })
  expect(model.specificationVersion).toBe('v4')
  const rerun = await runPrompt(await freshEngine({ model }), 'hi')
  expect(rerun.transitions.map((t) => [t.to, t.payload])).toEqual(original.transitions.map((t) => [t.to, t.payload]))
  expect(comparableParts(answers(rerun.messages))).toEqual(comparableParts(answers(original.messages)))
  expect(comparableChunks(rerun.chunks)).toEqual(comparableChunks(original.chunks))
})

test('a run that compacts where the recording went on with a step fails at that call, saying what it sent instead', async () => {
  h = await createHarness({ ...engineOptions, limits: undefined, tools: { add: addTool() } })
  h.server.tool('add', { a: 1, b: 2 }, { id: 'call_1', usage: { input: 400, output: 10 } })
  h.server.text('3')
  const original = await runPrompt(h.engine, 'Add 1+2.')
  expect(original.transitions.map((t) => t.to)).toEqual(['step-gate', 'streaming', 'tool-running', 'streaming', 'completed'])

  const model = await recordedModel(h.engine, original.turn.id)
  // A smaller context window: the first step's usage fills it, so the run compacts after its tools.
  const rerun = await runPrompt(await freshEngine({ model, tools: { add: addTool() }, limits: { context: 300, output: 0 } }), 'Add 1+2.')
  expect(rerun.transitions.map((t) => t.to)).toEqual(['step-gate', 'streaming', 'tool-running', 'compacting', 'failed'])
  expect(rerun.result.error).toMatchObject({ name: 'CompactionFailedError', lastError: { name: 'RecordingDivergedError', call: 2, step: 2, kind: 'step' } })
  expect(rerun.result.error?.lastError).toMatchObject({
    reason: expect.stringMatching(/^the recording sent 3 messages after the system prompt, the run sends 4; message 4 is a user message \(Summarise the conversation so far/),
  })
})
