/**
 * What a turn streams to its caller, through a real engine: typed `part.delta` events, the
 * turn's `fullStream` and `textStream` (several readers, a late one), and `stopWhen` with the
 * AI SDK's own stop conditions.
 */
import { hasToolCall, stepCountIs, tool } from 'ai'
import { z } from 'zod'
import { createEngine, idempotent, InvalidArgumentError, InvalidOptionError, type StopCondition, type TurnchartEvent, type TurnStreamPart } from '../../src'
import { createHarness, modelFor, type Harness } from '../support/harness'
import { collectUIChunks, comparableChunks } from '../support/ui-chunks'

let h: Harness | undefined
afterEach(async () => {
  await h?.close()
  h = undefined
})

async function collect<T>(stream: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = []
  for await (const item of stream) out.push(item)
  return out
}

const lookup = tool({ description: 'Look up', inputSchema: z.object({ q: z.string() }), execute: async ({ q }) => `found ${q}` })
const done = tool({ description: 'Say the work is done', inputSchema: z.object({}), execute: async () => 'ok' })

test('part.delta says which part it extends (text or reasoning) and names its turn', async () => {
  h = await createHarness()
  h.server.reasoning('Let me look.', 'The answer is 42.')
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'question')
  await turn.done
  const deltas = h.events.filter((e): e is Extract<TurnchartEvent, { type: 'part.delta' }> => e.type === 'part.delta')
  expect(deltas.every((d) => d.turnId === turn.id)).toBe(true)
  expect(deltas.filter((d) => d.partType === 'reasoning').map((d) => d.delta).join('')).toBe('Let me look.')
  expect(deltas.filter((d) => d.partType === 'text').map((d) => d.delta).join('')).toBe('The answer is 42.')
})

test('fullStream: typed parts in order, a tool step, a retried attempt and the finish with the usage; textStream: the answer alone', async () => {
  h = await createHarness({ tools: { lookup } })
  h.server.tool('lookup', { q: 'x' }, { id: 'call_1', usage: { input: 10, output: 3 } })
  h.server.error(503, { error: { type: 'overloaded_error', message: 'busy' } })
  h.server.reasoning('thinking', 'all done', { usage: { input: 20, output: 4 } })
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'go')
  const [parts, text] = await Promise.all([collect(turn.fullStream), collect(turn.textStream)])
  expect(text.join('')).toBe('all done')
  const types = parts.map((p) => p.type)
  expect(types[0]).toBe('start')
  expect(types.at(-1)).toBe('finish')
  // two steps; the second's first attempt failed before its stream began (its 503), so its start is attempt 2's
  expect(parts.filter((p) => p.type === 'start-step')).toEqual([{ type: 'start-step', step: 1, attempt: 1 }, { type: 'start-step', step: 2, attempt: 2 }])
  expect(parts.find((p) => p.type === 'tool-call')).toEqual({ type: 'tool-call', toolCallId: 'call_1', toolName: 'lookup', input: { q: 'x' } })
  expect(parts.find((p) => p.type === 'tool-result')).toMatchObject({ toolCallId: 'call_1', output: 'found x' })
  expect(parts.find((p) => p.type === 'retry')).toMatchObject({ attempt: 1, delayMs: expect.any(Number), message: expect.stringContaining('busy') })
  expect(parts.filter((p) => p.type === 'reasoning-delta').map((p) => (p as { text: string }).text).join('')).toBe('thinking')
  expect(parts.at(-1)).toMatchObject({ type: 'finish', finishReason: 'stop', totalUsage: { tokens: { input: 30, output: 7 } } })
  // the order of one step: its start, its content, its finish
  const second = types.lastIndexOf('start-step')
  const tail = types.slice(second).filter((t, i, all) => t !== all[i - 1]) // repeated deltas as one
  expect(tail).toEqual(['start-step', 'reasoning-start', 'reasoning-delta', 'reasoning-end', 'text-start', 'text-delta', 'text-end', 'finish-step', 'finish'])
})

test('a reader that starts after the turn ended gets every part, each part\'s text in one delta', async () => {
  h = await createHarness()
  h.server.text('one two three four', { deltas: 4 })
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'count')
  const live = await collect(turn.fullStream)
  await turn.done
  const late = await collect(turn.fullStream)
  const deltas = (parts: TurnStreamPart[]) => parts.filter((p) => p.type === 'text-delta').map((p) => (p as { text: string }).text)
  expect(deltas(live).length).toBeGreaterThan(1)
  expect(deltas(late)).toEqual([deltas(live).join('')])
  expect(late.map((p) => p.type).filter((t) => t !== 'text-delta')).toEqual(live.map((p) => p.type).filter((t) => t !== 'text-delta'))
  expect(await collect(turn.textStream)).toEqual(['one two three four'])
})

test('an aborted turn ends its streams with an abort part; a failed one with an error part', async () => {
  h = await createHarness()
  h.server.hang()
  h.server.error(400, { error: { type: 'invalid_request_error', message: 'bad' } })
  const session = await h.engine.createSession()
  const aborted = h.engine.prompt(session.id, 'wait')
  const reading = collect(aborted.fullStream)
  await h.server.waitForCall(1)
  aborted.abort()
  expect((await reading).at(-1)).toMatchObject({ type: 'abort', error: { name: 'MessageAbortedError' } })
  const failed = h.engine.prompt(session.id, 'fail')
  expect((await collect(failed.fullStream)).at(-1)).toMatchObject({ type: 'error', error: { name: 'APIError', statusCode: 400 } })
})

/** The UI message chunks of a `Response` (server-sent events, a JSON chunk each). */
async function uiChunks(response: Response): Promise<Array<Record<string, unknown> & { type: string }>> {
  const body = await response.text()
  return body
    .split('\n')
    .filter((line) => line.startsWith('data: {'))
    .map((line) => JSON.parse(line.slice('data: '.length)) as Record<string, unknown> & { type: string })
}

test('turn.toUIMessageStreamResponse(): the same chunks as the engine-wide UI stream; a late one, after the end, replays the turn and ends the same way', async () => {
  h = await createHarness({ tools: { lookup } })
  h.server.tool('lookup', { q: 'x' }, { id: 'call_1' })
  h.server.reasoning('thinking', 'all done')
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'go')
  const engineWide = collectUIChunks(h.engine, turn)
  const response = turn.toUIMessageStreamResponse({ headers: { 'x-chat': 'one' } })
  expect(response.headers.get('content-type')).toBe('text/event-stream')
  expect(response.headers.get('x-chat')).toBe('one')
  const live = await uiChunks(response)
  expect(comparableChunks(live)).toEqual(comparableChunks(await engineWide))
  await turn.done

  const late = await uiChunks(turn.toUIMessageStreamResponse())
  // A replay sends each part as it is now (a tool call at its result, text in one delta), where it was created.
  expect(late.map((c) => c.type).filter((t) => t.endsWith('-start') || t.endsWith('-end'))).toEqual(live.map((c) => c.type).filter((t) => (t.endsWith('-start') || t.endsWith('-end')) && t !== 'tool-input-start'))
  expect(late.filter((c) => c.type === 'reasoning-delta').map((c) => c.delta)).toEqual(['thinking'])
  expect(late.filter((c) => c.type === 'text-delta').map((c) => c.delta)).toEqual(['all done'])
  expect(late.find((c) => c.type === 'tool-output-available')).toMatchObject({ toolCallId: 'call_1', output: 'found x' })
  expect(late.at(-1)).toMatchObject({ type: 'finish', finishReason: 'stop' })
})

test('turn.toUIMessageStreamResponse() of an aborted turn ends with abort, of a failed one with error then finish', async () => {
  h = await createHarness()
  h.server.hang()
  h.server.error(400, { error: { type: 'invalid_request_error', message: 'bad' } })
  const session = await h.engine.createSession()
  const aborted = h.engine.prompt(session.id, 'wait')
  const reading = uiChunks(aborted.toUIMessageStreamResponse())
  await h.server.waitForCall(1)
  aborted.abort()
  expect((await reading).at(-1)).toMatchObject({ type: 'abort' })
  expect((await uiChunks(aborted.toUIMessageStreamResponse())).at(-1)).toMatchObject({ type: 'abort' })
  const failed = h.engine.prompt(session.id, 'fail')
  await failed.done
  const chunks = await uiChunks(failed.toUIMessageStreamResponse())
  expect(chunks.slice(-2)).toMatchObject([{ type: 'error', errorText: expect.stringContaining('bad') }, { type: 'finish', finishReason: 'error' }])
})

test('stopWhen with the AI SDK\'s stepCountIs: the turn completes once step 2\'s tools ran, and step 3 is never requested', async () => {
  h = await createHarness({ tools: { lookup }, stopWhen: stepCountIs(2) })
  h.server.tool('lookup', { q: 'a' })
  h.server.tool('lookup', { q: 'b' })
  h.server.text('never asked for')
  const session = await h.engine.createSession()
  const result = await h.engine.prompt(session.id, 'look twice').done
  expect(result.outcome).toBe('completed')
  expect(h.server.calls).toBe(2)
  const tools = (await h.engine.messages(session.id)).flatMap((m) => m.parts).filter((p) => p.type === 'tool')
  expect(tools.map((p) => p.type === 'tool' && p.state.status)).toEqual(['completed', 'completed'])
  // decided by the step gate's rules once step 2's tools are done (the tool actor asks them)
  expect((await h.engine.transitions(result.turnId)).slice(-2)).toMatchObject([
    { from: 'streaming', event: 'step.finished', to: 'tool-running' },
    { from: 'tool-running', event: 'gate.complete', to: 'completed', payload: { rule: 'stopWhen' } },
  ])
})

test('a prompt\'s stopWhen (hasToolCall, or an array with a custom function) replaces the engine\'s', async () => {
  h = await createHarness({ tools: { lookup, done }, stopWhen: stepCountIs(50) })
  h.server.tool('lookup', { q: 'a' })
  h.server.tool('done', {})
  const session = await h.engine.createSession()
  expect((await h.engine.prompt(session.id, 'work', { stopWhen: hasToolCall('done') }).done).outcome).toBe('completed')
  expect(h.server.calls).toBe(2) // no third request: the turn stopped after `done` ran

  const seen: number[] = []
  const custom: StopCondition = ({ steps }) => {
    seen.push(steps.length)
    return steps.at(-1)?.toolResults.some((r) => r.output === 'found stop') ?? false
  }
  h.server.tool('lookup', { q: 'go' })
  h.server.tool('lookup', { q: 'stop' })
  const second = await h.engine.prompt(session.id, 'until stop', { stopWhen: [stepCountIs(10), custom] }).done
  expect(second.outcome).toBe('completed')
  expect(seen).toEqual([1, 2])
})

test('maxSteps stays a guard: past it the turn fails with StepLimitError, with or without stopWhen', async () => {
  h = await createHarness({ tools: { lookup }, maxSteps: 1, stopWhen: stepCountIs(5) })
  h.server.tool('lookup', { q: 'a' })
  const session = await h.engine.createSession()
  const result = await h.engine.prompt(session.id, 'go').done
  expect(result).toMatchObject({ outcome: 'failed', error: { name: 'StepLimitError' } })
})

test('a stop condition that throws fails the turn, naming stopWhen; nothing is unhandled', async () => {
  h = await createHarness({ tools: { lookup } })
  h.server.tool('lookup', { q: 'a' })
  const session = await h.engine.createSession()
  const broken = () => {
    throw new Error('condition broke')
  }
  const result = await h.engine.prompt(session.id, 'go', { stopWhen: broken }).done
  expect(result).toMatchObject({ outcome: 'failed', error: { message: expect.stringContaining('a stopWhen condition threw: condition broke') } })
})

test('stopWhen that is not a function is refused, naming the option', async () => {
  h = await createHarness()
  const session = await h.engine.createSession()
  expect(() => h!.engine.prompt(session.id, 'x', { stopWhen: [stepCountIs(1), 3 as never] })).toThrow(InvalidArgumentError)
  expect(() => h!.engine.prompt(session.id, 'x', { stopWhen: 3 as never })).toThrow(/options\.stopWhen/)
  await expect(createEngine({ model: modelFor(h.server), stopWhen: 'never' as never })).rejects.toThrow(InvalidOptionError)
})

test("a recovered turn runs with the recovering engine's stopWhen (a prompt's, a function, is not stored)", async () => {
  let release!: () => void
  const closed = new Promise<void>((resolve) => (release = resolve))
  // Idempotent, so recovery runs it again (a non-idempotent call would wait in doubt). A run
  // waits until the first engine has closed: the first engine's (if its tool started before
  // the close) ends after the turn detached, unstored; the recovering engine's answers at once.
  const blocking = idempotent(tool({ description: 'Blocks', inputSchema: z.object({}), execute: () => closed.then(() => 'late') }))
  h = await createHarness({ tools: { blocking } })
  h.server.tool('blocking', {})
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'block', { stopWhen: stepCountIs(1) })
  await h.waitForEvent((e) => e.type === 'turn.transition' && e.to === 'tool-running')
  await h.engine.close() // the turn stays open in tool-running for the next engine
  release()
  await expect(turn.done).rejects.toMatchObject({ name: 'EngineClosedError' })
  const next = await createEngine({ database: h.dbPath, model: modelFor(h.server), tools: { blocking }, stopWhen: stepCountIs(1), recovery: { onOpen: false } })
  try {
    const [resumed] = await next.recover()
    expect((await resumed.done).outcome).toBe('completed')
    expect(h.server.calls).toBe(1) // no second step: the engine's stopWhen held after step 1
  } finally {
    await next.close()
  }
})
