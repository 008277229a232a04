/**
 * One part stream per turn (issue 34): the engine's bus, the turn's `fullStream`, its own UI
 * message stream, the engine-wide UI stream and the chat handler's stream are transforms of the
 * same events, so they agree delta by delta; a reader that starts late (a `fullStream`, a page
 * that reloads and reconnects with a GET) gets the text so far in one delta, then the same
 * deltas as everyone else.
 */
import { DefaultChatTransport, readUIMessageStream, tool, type UIMessage, type UIMessageChunk } from 'ai'
import { z } from 'zod'
import { createChatHandler, type ChatHandler, type TurnchartEvent, type TurnStreamPart } from '../../src'
import { createHarness, type Harness } from '../support/harness'
import { collectUIChunks } from '../support/ui-chunks'

let h: Harness
let handler: ChatHandler
afterEach(async () => {
  handler?.close()
  await h?.close()
})

const lookup = tool({ description: 'Look up', inputSchema: z.object({ q: z.string() }), execute: async ({ q }) => `found ${q}` })

type Chunk = { type: string; delta?: string; id?: string }

async function collect<T>(stream: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = []
  for await (const item of stream) out.push(item)
  return out
}

/** The chunks of a UI message stream, decoded by the AI SDK as useChat does (a protocol error throws). */
async function decode(stream: ReadableStream<UIMessageChunk>): Promise<{ chunks: Chunk[]; message: UIMessage | undefined }> {
  const chunks: Chunk[] = []
  const tapped = stream.pipeThrough(new TransformStream<UIMessageChunk, UIMessageChunk>({ transform: (chunk, c) => (chunks.push(chunk as Chunk), c.enqueue(chunk)) }))
  let message: UIMessage | undefined
  for await (const snapshot of readUIMessageStream({ stream: tapped })) message = snapshot
  return { chunks, message }
}

async function responseChunks(response: Response): Promise<Chunk[]> {
  return (await response.text())
    .split('\n')
    .filter((line) => line.startsWith('data: {'))
    .map((line) => JSON.parse(line.slice('data: '.length)) as Chunk)
}

const uiDeltas = (chunks: Chunk[], type: 'text-delta' | 'reasoning-delta' = 'text-delta') => chunks.filter((c) => c.type === type).map((c) => c.delta!)
const partDeltas = (parts: TurnStreamPart[], type: 'text-delta' | 'reasoning-delta' = 'text-delta') =>
  parts.flatMap((p) => (p.type === type ? [(p as { text: string }).text] : []))

/** A late reader's deltas: the text so far in one, then the live ones; checked against all of them. */
function expectLateDeltas(late: string[], all: string[]): number {
  const [first, ...rest] = late
  const k = all.length - rest.length
  expect(rest).toEqual(all.slice(k))
  expect(first).toBe(all.slice(0, k).join(''))
  return k
}

test('bus events, fullStream, the UI streams and the chat handler agree delta by delta; a late reader and a reloaded page replay the text so far, then the same deltas', async () => {
  h = await createHarness({ tools: { lookup } })
  handler = createChatHandler(h.engine, { onDisconnect: 'detach' })
  const transport = new DefaultChatTransport<UIMessage>({
    api: 'http://127.0.0.1/api/chat',
    fetch: (async (input: string | URL, init?: RequestInit) => handler(new Request(input, init))) as typeof fetch,
  })
  const words = Array.from({ length: 60 }, (_, i) => `w${i} `)
  h.server.tool('lookup', { q: 'x' }, { id: 'call_1' })
  h.server.push({ type: 'stream', delayMs: 4, chunks: [{ reasoning: 'let me ' }, { reasoning: 'think' }, ...words.map((text) => ({ text }))] })

  const page = await transport.sendMessages({ chatId: 'agree', messages: [{ id: 'u1', role: 'user', parts: [{ type: 'text', text: 'go' }] }], trigger: 'submit-message', messageId: undefined, abortSignal: undefined })
  const turn = h.engine.activeTurn('agree')!
  const pageRead = decode(page)
  const full = collect(turn.fullStream)
  const own = responseChunks(turn.toUIMessageStreamResponse())
  const engineWide = collectUIChunks(h.engine, turn)

  // Mid-answer: a fullStream that starts late, and a page that reloads (a GET reconnects to the stream).
  await h.waitForEvent((e) => e.type === 'part.delta' && e.delta === 'w20 ')
  const lateFull = collect(turn.fullStream)
  const reconnected = await transport.reconnectToStream({ chatId: 'agree' })
  expect(reconnected).not.toBeNull()
  const reloaded = decode(reconnected!)
  expect((await turn.done).outcome).toBe('completed')

  const bus = h.events.filter((e): e is Extract<TurnchartEvent, { type: 'part.delta' }> => e.type === 'part.delta' && e.turnId === turn.id)
  const text = bus.filter((e) => e.partType === 'text').map((e) => e.delta)
  const reasoning = bus.filter((e) => e.partType === 'reasoning').map((e) => e.delta)
  expect(text).toEqual(words)
  expect(reasoning).toEqual(['let me ', 'think'])

  const parts = await full
  expect(partDeltas(parts)).toEqual(text)
  expect(partDeltas(parts, 'reasoning-delta')).toEqual(reasoning)
  for (const chunks of [(await pageRead).chunks, await own, await engineWide]) {
    expect(uiDeltas(chunks)).toEqual(text)
    expect(uiDeltas(chunks, 'reasoning-delta')).toEqual(reasoning)
    // The tool step: one input and one output, as the bus's stage changes say.
    expect(chunks.filter((c) => c.type === 'tool-input-available')).toHaveLength(1)
    expect(chunks.filter((c) => c.type === 'tool-output-available')).toHaveLength(1)
    expect(chunks.at(-1)).toMatchObject({ type: 'finish', finishReason: 'stop' })
  }
  const stages = h.events.filter((e) => e.type === 'part.updated' && e.part.type === 'tool' && e.change === 'stage')
  expect(stages.map((e) => e.type === 'part.updated' && e.part.type === 'tool' && [e.from, e.part.state.status])).toEqual([['pending', 'running'], ['running', 'completed']])
  expect(parts.filter((p) => p.type === 'tool-call' || p.type === 'tool-result').map((p) => p.type)).toEqual(['tool-call', 'tool-result'])

  // The late ones: mid-answer, the text so far in one delta, then each live delta.
  const late = await lateFull
  const k = expectLateDeltas(partDeltas(late), text)
  expect(k).toBeGreaterThan(20)
  expect(k).toBeLessThan(words.length)
  expect(partDeltas(late, 'reasoning-delta')).toEqual([reasoning.join('')])
  const page2 = await reloaded
  expectLateDeltas(uiDeltas(page2.chunks), text)
  expect(page2.chunks[0]).toMatchObject({ type: 'start', messageId: expect.any(String) })
  expect(page2.message?.parts.filter((p) => p.type === 'text').map((p) => (p as { text: string }).text).join('')).toBe(words.join(''))
  expect(page2.chunks.filter((c) => c.type === 'tool-output-available')).toHaveLength(1)
  expect(page2.chunks.at(-1)).toMatchObject({ type: 'finish' })
})

test('a replay is the parts as they are now plus a bounded tail of the other events', async () => {
  h = await createHarness({ tools: { lookup } })
  // 70 retries' worth of events would not fit the tail: here a few steps, and the replay's shape.
  h.server.tool('lookup', { q: 'a' }, { id: 'call_1' })
  h.server.text('one two three', { deltas: 3 })
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'go')
  await turn.done
  const replayed: TurnchartEvent[] = []
  const unsubscribe = turn.subscribe((e) => replayed.push(e), { replay: true })
  unsubscribe()
  // No delta is replayed: each part carries its text.
  expect(replayed.filter((e) => e.type === 'part.delta')).toEqual([])
  const text = replayed.find((e) => e.type === 'part.updated' && e.part.type === 'text' && e.origin === 'answer')
  expect(text).toMatchObject({ change: 'open', part: { text: 'one two three', time: { end: expect.any(Number) } } })
  expect(replayed.every((e) => e.type !== 'part.updated' || e.change === 'open')).toBe(true)
  const others = replayed.filter((e) => e.type !== 'part.updated' && e.type !== 'message.updated')
  expect(others.length).toBeLessThanOrEqual(64)
  expect(others.at(-1)).toMatchObject({ type: 'session.status', status: { type: 'idle' } })
})
