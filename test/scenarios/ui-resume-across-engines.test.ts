/**
 * Resuming a turn that another engine runs (two engines on one database, as two processes on
 * PostgreSQL would be): the GET polls the turn's rows and streams what they add, once each.
 */
import { DefaultChatTransport, readUIMessageStream, type UIMessage } from 'ai'
import { createChatHandler, createEngine, type ChatHandler, type Engine } from '../../src'
import { createHarness, modelFor, type Harness } from '../support/harness'

let h: Harness
let other: Engine
let handler: ChatHandler
afterEach(async () => {
  handler?.close()
  await other?.close()
  await h?.close()
})

test('a page served by another engine reattaches to the running turn by polling: all the text, once, then finish', async () => {
  h = await createHarness({ flushIntervalMs: 20 })
  other = await createEngine({ database: h.dbPath, model: modelFor(h.server), limits: { context: 100_000, output: 10_000 }, recovery: { onOpen: false, intervalMs: 0 } })
  handler = createChatHandler(other, { pollIntervalMs: 30 })
  const words = Array.from({ length: 30 }, (_, i) => `w${i} `)
  h.server.push({ type: 'stream', delayMs: 8, chunks: [{ reasoning: 'plan' }, ...words.map((text) => ({ text }))] })
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'write')
  await h.waitForEvent((e) => e.type === 'part.delta' && e.delta === 'w5 ')
  const transport = new DefaultChatTransport<UIMessage>({
    api: 'http://127.0.0.1/api/chat',
    fetch: (async (input: string | URL, init?: RequestInit) => handler(new Request(input, init))) as typeof fetch,
  })
  // A prompt to the other engine while the turn runs is refused, not queued.
  const busy = await handler(new Request('http://127.0.0.1/api/chat', { method: 'POST', body: JSON.stringify({ id: session.id, messages: [{ id: 'u', role: 'user', parts: [{ type: 'text', text: 'again' }] }] }) }))
  expect(busy.status).toBe(409)
  const stream = await transport.reconnectToStream({ chatId: session.id })
  expect(stream).not.toBeNull()
  const types: string[] = []
  let message: UIMessage | undefined
  const tapped = stream!.pipeThrough(new TransformStream({ transform: (chunk, c) => (types.push(chunk.type), c.enqueue(chunk)) }))
  for await (const snapshot of readUIMessageStream({ stream: tapped })) message = snapshot
  expect((await turn.done).outcome).toBe('completed')
  const text = message!.parts.filter((p) => p.type === 'text').map((p) => (p as { text: string }).text).join('')
  expect(text).toBe(words.join(''))
  expect(message!.parts.filter((p) => p.type === 'reasoning').map((p) => (p as { text: string }).text)).toEqual(['plan'])
  expect(types.filter((t) => t === 'start-step')).toHaveLength(1)
  expect(types.at(-1)).toBe('finish')
  expect(message!.parts.find((p) => p.type === 'data-turn-state')).toMatchObject({ data: { state: 'completed' } })
  expect((await handler(new Request(`http://127.0.0.1/api/chat/${session.id}/stream`))).status).toBe(204)
})
