/**
 * The AI SDK's call and tool options that have a meaning in a turn, honoured: the prompt's
 * `abortSignal` aborts the turn as `turn.abort()` does; a tool's `toModelOutput` is what the
 * model sees of its result while the stored part keeps the raw result.
 */
import { tool } from 'ai'
import { z } from 'zod'
import { createHarness, type Harness } from '../support/harness'

let h: Harness
afterEach(async () => {
  await h?.close()
})

test("prompt's abortSignal aborts the streaming turn with the signal's reason, its streamed text kept", async () => {
  h = await createHarness()
  h.server.push({ type: 'stream', chunks: [{ text: 'A long answer ' }], end: 'hang' })
  const session = await h.engine.createSession()
  const controller = new AbortController()
  const turn = h.engine.prompt(session.id, 'Tell me everything.', { abortSignal: controller.signal })
  await h.waitForEvent((e) => e.type === 'part.delta' && e.turnId === turn.id)
  controller.abort(new Error('the user left'))
  const result = await turn.done
  expect(result.outcome).toBe('aborted')
  expect((await h.engine.transitions(turn.id)).map((t) => t.to).slice(-1)).toEqual(['aborted'])
  const row = await h.engine.getTurn(turn.id)
  expect(row).toMatchObject({ outcome: 'aborted' })
  expect(JSON.stringify(await h.engine.transitions(turn.id))).toContain('the user left')
  const texts = (await h.engine.messages(session.id)).flatMap((m) => m.parts).filter((p) => p.type === 'text')
  expect(texts.map((p) => (p as { text: string }).text)).toContain('A long answer ')
})

test('an abortSignal already aborted ends the turn aborted without a model call; a signal that is not one is refused', async () => {
  h = await createHarness()
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'hi', { abortSignal: AbortSignal.abort('too late') })
  expect((await turn.done).outcome).toBe('aborted')
  expect(h.server.calls).toBe(0)
  expect(() => h.engine.prompt(session.id, 'hi', { abortSignal: { aborted: false } as never })).toThrow(/invalid argument options\.abortSignal: expected an AbortSignal/)
  expect(() => h.engine.prompt(session.id, 'hi', { whenBusy: 'enqueue', abortSignal: new AbortController().signal } as never)).toThrow(/no abortSignal with whenBusy 'enqueue'/)
})

test("a tool's toModelOutput is what the model is sent; the stored part keeps the raw result", async () => {
  const search = tool({
    description: 'Search the docs',
    inputSchema: z.object({ query: z.string() }),
    execute: async ({ query }) => ({ query, hits: [{ title: 'Retry', body: 'a very long body the model need not read' }] }),
    toModelOutput: ({ output }) => ({ type: 'text', value: `1 hit: ${(output as { hits: Array<{ title: string }> }).hits[0].title}` }),
  })
  h = await createHarness({ tools: { search } })
  h.server.push({ type: 'stream', chunks: [{ tool: { name: 'search', input: { query: 'retry' }, id: 'call_1' } }] })
  h.server.text('Found the retry page.')
  const session = await h.engine.createSession()
  expect((await h.engine.prompt(session.id, 'Find retry docs').done).outcome).toBe('completed')
  const toolMessage = h.server.requests[1].body.messages.find((m: { role: string }) => m.role === 'tool')
  expect(toolMessage).toMatchObject({ role: 'tool', tool_call_id: 'call_1', content: '1 hit: Retry' })
  const parts = (await h.engine.messages(session.id)).flatMap((m) => m.parts)
  expect(parts.find((p) => p.type === 'tool')).toMatchObject({ state: { status: 'completed', output: { query: 'retry', hits: [{ title: 'Retry' }] } } })
})

test("a tool's onInputStart, onInputDelta and onInputAvailable are called as the model streams the call", async () => {
  const heard: Array<[string, unknown]> = []
  const lookup = tool({
    description: 'Look a word up',
    inputSchema: z.object({ word: z.string() }),
    onInputStart: ({ toolCallId, messages }) => void heard.push(['start', { toolCallId, sent: messages.length > 0 }]),
    onInputDelta: ({ inputTextDelta }) => void heard.push(['delta', inputTextDelta]),
    onInputAvailable: ({ input, toolCallId }) => void heard.push(['available', { input, toolCallId }]),
    execute: async ({ word }) => `${word}: hello`,
  })
  h = await createHarness({ tools: { lookup } })
  h.server.push({ type: 'stream', chunks: [{ tool: { name: 'lookup', input: { word: 'ciao' }, id: 'call_1' } }] })
  h.server.text('It means hello.')
  const session = await h.engine.createSession()
  expect((await h.engine.prompt(session.id, 'What is ciao?').done).outcome).toBe('completed')
  expect(heard[0]).toEqual(['start', { toolCallId: 'call_1', sent: true }])
  const deltas = heard.filter(([kind]) => kind === 'delta').map(([, delta]) => delta).join('')
  expect(JSON.parse(deltas)).toEqual({ word: 'ciao' })
  expect(heard.at(-1)).toEqual(['available', { input: { word: 'ciao' }, toolCallId: 'call_1' }])
})

test("the provider's warnings (a setting it does not support) are kept on the step's start part and published with it", async () => {
  h = await createHarness()
  h.server.text('Hi.')
  const session = await h.engine.createSession()
  expect((await h.engine.prompt(session.id, 'Hi', { topK: 5 }).done).outcome).toBe('completed')
  const start = (await h.engine.messages(session.id)).flatMap((m) => m.parts).find((p) => p.type === 'step-start')
  expect(start).toMatchObject({ warnings: [expect.objectContaining({ type: 'unsupported', feature: 'topK' })] })
  const published = h.events.find((e) => e.type === 'part.updated' && e.part.type === 'step-start')
  expect(published).toMatchObject({ part: { warnings: [expect.objectContaining({ feature: 'topK' })] } })
})
