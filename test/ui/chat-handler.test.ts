/**
 * The chat handler as useChat uses it: requests go through the AI SDK's own DefaultChatTransport
 * (its fetch calls the handler), and responses are decoded with the SDK's readUIMessageStream.
 */
import { DefaultChatTransport, readUIMessageStream, tool, type UIMessage, type UIMessageChunk } from 'ai'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { z } from 'zod'
import { createChatHandler, toNodeListener, toUIMessages, type ChatHandler, type ChatHandlerOptions, type TurnchartUIMessage, type TurnStateData } from '../../src'
import { deployTool } from '../support/deploy-tool'
import { createHarness, type Harness } from '../support/harness'

let h: Harness
let handler: ChatHandler
afterEach(async () => {
  handler?.close()
  await h?.close()
})

const { deploy, deployed } = deployTool()
const read = tool({ description: 'Read a file', inputSchema: z.object({ path: z.string() }), execute: async ({ path }) => `contents of ${path}` })

async function setup(options: ChatHandlerOptions = {}, engineOptions: { parkAfterMs?: number } = {}) {
  deployed.length = 0
  h = await createHarness({ tools: { read, deploy }, ...engineOptions })
  handler = createChatHandler(h.engine, options)
  const transport = new DefaultChatTransport<UIMessage>({
    api: 'http://127.0.0.1/api/chat',
    fetch: (async (input: string | URL, init?: RequestInit) => handler(new Request(input, init))) as typeof fetch,
  })
  return transport
}

const userMessage = (text: string): UIMessage => ({ id: `u-${text.length}`, role: 'user', parts: [{ type: 'text', text }] })

/** Records the chunk types that pass, and decodes the stream into its last UIMessage. */
async function decode(stream: ReadableStream<UIMessageChunk>, message?: UIMessage) {
  const chunks: UIMessageChunk[] = []
  const states: TurnStateData[] = []
  const tapped = stream.pipeThrough(
    new TransformStream<UIMessageChunk, UIMessageChunk>({
      transform(chunk, controller) {
        chunks.push(chunk)
        if (chunk.type === 'data-turn-state') states.push(chunk.data as TurnStateData)
        controller.enqueue(chunk)
      },
    }),
  )
  let last: UIMessage | undefined
  for await (const snapshot of readUIMessageStream({ stream: tapped, message })) last = snapshot
  return { message: last as TurnchartUIMessage, chunks, types: chunks.map((c) => c.type), states }
}

function textOf(message: UIMessage, type: 'text' | 'reasoning' = 'text'): string {
  return message.parts
    .filter((p): p is { type: 'text'; text: string } => p.type === type)
    .map((p) => p.text)
    .join('|')
}

test('a turn streams as one UIMessage: reasoning, text, a tool call and its output, steps, usage, the chart state', async () => {
  const transport = await setup()
  h.server.push({ type: 'stream', chunks: [{ reasoning: 'I should ' }, { reasoning: 'read it' }, { text: 'Reading.' }, { tool: { name: 'read', input: { path: 'a.txt' }, id: 'call_r' } }] })
  h.server.text('It says hello.', { usage: { input: 20, output: 4 } })
  const stream = await transport.sendMessages({ chatId: 'chat-1', messages: [userMessage('read a.txt')], trigger: 'submit-message', messageId: undefined, abortSignal: undefined })
  const { message, types, states } = await decode(stream)
  expect(textOf(message, 'reasoning')).toBe('I should read it')
  expect(textOf(message)).toBe('Reading.|It says hello.')
  expect(message.parts.find((p) => p.type === 'tool-read')).toMatchObject({ toolCallId: 'call_r', state: 'output-available', input: { path: 'a.txt' }, output: 'contents of a.txt' })
  expect(message.parts.filter((p) => p.type === 'step-start')).toHaveLength(2)
  expect(types.filter((t) => t === 'finish-step')).toHaveLength(2)
  expect(types.at(-1)).toBe('finish')
  expect(message.metadata).toMatchObject({ finish: 'stop', tokens: { input: 30, output: 9 } }) // the turn's two steps
  expect(states.map((s) => s.state)).toEqual(expect.arrayContaining(['step-gate', 'streaming', 'tool-running', 'step-gate', 'completed']))
  expect(message.parts.find((p) => p.type === 'data-turn-state')).toMatchObject({ data: { state: 'completed' } })
  // The chat id is the session id; the stored conversation converts to the same parts.
  const stored = toUIMessages(await h.engine.messages('chat-1'))
  expect(stored.map((m) => m.role)).toEqual(['user', 'assistant'])
  expect(textOf(stored[1])).toBe(textOf(message))
  expect(stored[1].parts.find((p) => p.type === 'tool-read')).toMatchObject({ state: 'output-available', output: 'contents of a.txt' })
})

test('a retry shows as turn state retry-waiting with the attempt and the deadline, then the answer', async () => {
  const transport = await setup()
  h.server.error(429, { error: { message: 'slow down' } }, { 'retry-after-ms': '30' })
  h.server.text('after the retry')
  const before = Date.now()
  const stream = await transport.sendMessages({ chatId: 'chat-r', messages: [userMessage('hi')], trigger: 'submit-message', messageId: undefined, abortSignal: undefined })
  const { message, states } = await decode(stream)
  const retry = states.filter((s) => s.state === 'retry-waiting').at(-1)
  expect(retry).toMatchObject({ attempt: 2, message: expect.stringContaining('slow down') })
  expect(retry!.retryAt).toBeGreaterThanOrEqual(before + 30)
  expect(textOf(message)).toBe('after the retry')
  expect(states.at(-1)).toMatchObject({ state: 'completed' })
})

test('a tool error and a failed turn reach the page', async () => {
  const transport = await setup()
  h.server.tool('nope', { x: 1 }, { id: 'call_n' })
  h.server.error(401, { error: { message: 'bad key' } })
  const stream = await transport.sendMessages({ chatId: 'chat-f', messages: [userMessage('go')], trigger: 'submit-message', messageId: undefined, abortSignal: undefined })
  const { message, chunks } = await decode(stream)
  expect(message.parts.find((p) => p.type === 'tool-nope')).toMatchObject({ state: 'output-error', errorText: expect.any(String) })
  expect(chunks.find((c) => c.type === 'error')).toMatchObject({ errorText: expect.stringContaining('bad key') })
})

test('a client that drops the stream aborts the turn (useChat stop)', async () => {
  const transport = await setup()
  h.server.push({ type: 'stream', chunks: [{ text: 'one ' }, { text: 'two ' }], end: 'hang' })
  const stop = new AbortController()
  const stream = await transport.sendMessages({ chatId: 'chat-a', messages: [userMessage('long')], trigger: 'submit-message', messageId: undefined, abortSignal: stop.signal })
  const reader = stream.getReader()
  for (;;) {
    const { value } = await reader.read()
    if (value?.type === 'text-delta' && value.delta === 'two ') break
  }
  const turn = h.engine.activeTurn('chat-a')!
  stop.abort()
  await reader.cancel().catch(() => undefined)
  expect(await turn.done).toMatchObject({ outcome: 'aborted' })
  const [, assistant] = await h.engine.messages('chat-a')
  expect(assistant.info.error).toMatchObject({ name: 'MessageAbortedError' })
})

test('detached: DELETE <api>/<id>/stream aborts, and the stream ends with an abort chunk', async () => {
  const transport = await setup({ onDisconnect: 'detach' })
  h.server.push({ type: 'stream', chunks: [{ text: 'one ' }, { text: 'two ' }], end: 'hang' })
  const stream = await transport.sendMessages({ chatId: 'chat-d', messages: [userMessage('long')], trigger: 'submit-message', messageId: undefined, abortSignal: undefined })
  const reading = decode(stream)
  await h.waitForEvent((e) => e.type === 'part.delta' && e.delta === 'two ')
  const response = await handler(new Request('http://127.0.0.1/api/chat/chat-d/stream', { method: 'DELETE' }))
  expect(response.status).toBe(204)
  const { message, types } = await reading
  expect(types.at(-1)).toBe('abort')
  expect(textOf(message)).toBe('one two ')
  expect(message.parts.find((p) => p.type === 'data-turn-state')).toMatchObject({ data: { state: 'aborted' } })
})

test('a POST while a turn runs gets 409 SessionBusyError; a GET stream when nothing runs gets 204', async () => {
  const transport = await setup()
  expect((await handler(new Request('http://127.0.0.1/api/chat/none/stream'))).status).toBe(204)
  expect(await transport.reconnectToStream({ chatId: 'none' })).toBeNull()
  h.server.hang()
  await transport.sendMessages({ chatId: 'chat-b', messages: [userMessage('first')], trigger: 'submit-message', messageId: undefined, abortSignal: undefined })
  const second = await handler(
    new Request('http://127.0.0.1/api/chat', { method: 'POST', body: JSON.stringify({ id: 'chat-b', messages: [userMessage('second')] }) }),
  )
  expect(second.status).toBe(409)
  expect(await second.json()).toMatchObject({ error: { name: 'SessionBusyError', sessionId: 'chat-b' } })
  expect((await handler(new Request('http://127.0.0.1/api/chat', { method: 'POST', body: '{}' }))).status).toBe(400)
  await h.engine.abort('chat-b')
})

test('an approval: the page sees tool-approval-request, its response approves through the POST, the turn goes on', async () => {
  const transport = await setup()
  h.server.tool('deploy', { env: 'prod' }, { id: 'call_d' })
  h.server.text('Deployed.')
  const user = userMessage('ship it')
  const first = await decode(await transport.sendMessages({ chatId: 'chat-p', messages: [user], trigger: 'submit-message', messageId: undefined, abortSignal: undefined }))
  expect(first.types).toContain('tool-approval-request')
  const requested = first.message.parts.find((p) => p.type === 'tool-deploy') as { state: string; approval: { id: string } }
  expect(requested).toMatchObject({ state: 'approval-requested', approval: { id: 'call_d' } })
  expect(deployed).toEqual([])
  // What addToolApprovalResponse does to the message, then the automatic re-send.
  const answered: UIMessage = {
    ...first.message,
    parts: first.message.parts.map((p) => (p.type === 'tool-deploy' ? { ...p, state: 'approval-responded', approval: { id: 'call_d', approved: true } } : p)) as UIMessage['parts'],
  }
  const resent = structuredClone(answered)
  const second = await decode(
    await transport.sendMessages({ chatId: 'chat-p', messages: [user, answered], trigger: 'submit-message', messageId: undefined, abortSignal: undefined }),
    answered,
  )
  expect(deployed).toEqual(['prod'])
  expect(second.message.parts.filter((p) => p.type === 'tool-deploy')).toEqual([expect.objectContaining({ state: 'output-available', output: 'deployed to prod' })])
  expect(textOf(second.message)).toBe('Deployed.')
  expect(second.types).not.toContain('tool-input-start') // the page already has the call
  // A second answer to the same request finds nothing pending.
  const again = await handler(new Request('http://127.0.0.1/api/chat', { method: 'POST', body: JSON.stringify({ id: 'chat-p', messages: [user, resent] }) }))
  expect(await again.json()).toMatchObject({ error: { name: 'ApprovalNotPendingError' } })
  expect(again.status).toBe(409)
})

test('a denial from the page reaches engine.deny with its reason', async () => {
  const transport = await setup()
  h.server.tool('deploy', { env: 'prod' }, { id: 'call_x' })
  h.server.text('Understood.')
  const user = userMessage('ship it')
  const first = await decode(await transport.sendMessages({ chatId: 'chat-x', messages: [user], trigger: 'submit-message', messageId: undefined, abortSignal: undefined }))
  const answered: UIMessage = {
    ...first.message,
    parts: first.message.parts.map((p) => (p.type === 'tool-deploy' ? { ...p, state: 'approval-responded', approval: { id: 'call_x', approved: false, reason: 'not today' } } : p)) as UIMessage['parts'],
  }
  const second = await decode(
    await transport.sendMessages({ chatId: 'chat-x', messages: [user, answered], trigger: 'submit-message', messageId: undefined, abortSignal: undefined }),
    answered,
  )
  expect(deployed).toEqual([])
  expect(second.message.parts.find((p) => p.type === 'tool-deploy')).toMatchObject({ state: 'output-denied' })
  const stored = toUIMessages(await h.engine.messages('chat-x'))
  expect(stored[1].parts.find((p) => p.type === 'tool-deploy')).toMatchObject({ state: 'output-denied', approval: { approved: false, reason: 'not today' } })
})

test("authorize may answer with an identity ({ by }): the approval's receipt names who approved", async () => {
  const transport = await setup({ authorize: (request) => ({ by: request.headers.get('x-user') ?? 'nobody' }) })
  h.server.tool('deploy', { env: 'prod' }, { id: 'call_by' })
  h.server.text('Deployed.')
  const user = userMessage('ship it')
  const headers = { 'x-user': 'ada' }
  const first = await decode(await transport.sendMessages({ chatId: 'chat-by', messages: [user], trigger: 'submit-message', messageId: undefined, abortSignal: undefined, headers }))
  const answered: UIMessage = {
    ...first.message,
    parts: first.message.parts.map((p) => (p.type === 'tool-deploy' ? { ...p, state: 'approval-responded', approval: { id: 'call_by', approved: true } } : p)) as UIMessage['parts'],
  }
  await decode(await transport.sendMessages({ chatId: 'chat-by', messages: [user, answered], trigger: 'submit-message', messageId: undefined, abortSignal: undefined, headers }), answered)
  expect(deployed).toEqual(['prod'])
  expect(await h.engine.approvalReceipts('chat-by')).toEqual([expect.objectContaining({ decision: 'approved', by: 'ada', callId: 'call_by', tool: 'deploy' })])
})

test('an approval of a parked turn (parkAfterMs: 0): the POST takes the turn, approves it and streams the rest', async () => {
  const transport = await setup({}, { parkAfterMs: 0 })
  h.server.tool('deploy', { env: 'prod' }, { id: 'call_pk' })
  h.server.text('Deployed.')
  const user = userMessage('ship it')
  const first = await decode(await transport.sendMessages({ chatId: 'chat-pk', messages: [user], trigger: 'submit-message', messageId: undefined, abortSignal: undefined }))
  expect(first.types).toContain('tool-approval-request')
  const turnId = first.message.metadata!.turnId!
  await h.engine.activeTurn('chat-pk')?.done.catch(() => undefined) // it parks: its handle lets go
  expect(h.engine.activeTurn('chat-pk')).toBeUndefined()
  expect((await h.engine.getTurn(turnId))?.owner).toBe('turnchart:parked')
  const answered: UIMessage = {
    ...first.message,
    parts: first.message.parts.map((p) => (p.type === 'tool-deploy' ? { ...p, state: 'approval-responded', approval: { id: 'call_pk', approved: true } } : p)) as UIMessage['parts'],
  }
  const second = await decode(await transport.sendMessages({ chatId: 'chat-pk', messages: [user, answered], trigger: 'submit-message', messageId: undefined, abortSignal: undefined }), answered)
  expect(deployed).toEqual(['prod'])
  expect(textOf(second.message)).toBe('Deployed.')
})

test('resume: a GET after the page dropped its stream replays what was streamed, then goes on live, without gaps or duplicates', async () => {
  const transport = await setup({ onDisconnect: 'detach' })
  const words = Array.from({ length: 40 }, (_, i) => `w${i} `)
  h.server.push({ type: 'stream', delayMs: 5, chunks: [{ reasoning: 'plan' }, ...words.map((text) => ({ text }))] })
  const dropped = new AbortController()
  const stream = await transport.sendMessages({ chatId: 'chat-z', messages: [userMessage('write')], trigger: 'submit-message', messageId: undefined, abortSignal: dropped.signal })
  const reader = stream.getReader()
  for (;;) {
    const { value } = await reader.read()
    if (value?.type === 'text-delta' && value.delta === 'w10 ') break
  }
  dropped.abort() // the page reloads
  await reader.cancel().catch(() => undefined)
  await h.waitForEvent((e) => e.type === 'part.delta' && e.delta === 'w15 ')
  const resumed = await transport.reconnectToStream({ chatId: 'chat-z' })
  expect(resumed).not.toBeNull()
  const { message, types } = await decode(resumed!)
  expect(textOf(message)).toBe(words.join(''))
  expect(textOf(message, 'reasoning')).toBe('plan')
  expect(types[0]).toBe('start')
  expect(types.at(-1)).toBe('finish')
  const [, assistant] = await h.engine.messages('chat-z')
  expect(message.id).toBe(assistant.info.id) // useChat replaces its copy of the stored message
  expect(await handler(new Request('http://127.0.0.1/api/chat/chat-z/stream')).then((r) => r.status)).toBe(204)
  const history = await handler(new Request('http://127.0.0.1/api/chat/chat-z/messages'))
  expect(textOf(((await history.json()) as UIMessage[])[1])).toBe(words.join(''))
})

test('over Node http (toNodeListener): the stream arrives as server-sent events, and a client that goes away aborts the turn', async () => {
  await setup()
  const server = http.createServer(toNodeListener(handler))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  try {
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/chat`
    h.server.push({ type: 'stream', chunks: [{ text: 'hello ' }], end: 'hang' })
    const client = new AbortController()
    const response = await fetch(url, { method: 'POST', body: JSON.stringify({ id: 'chat-n', messages: [userMessage('hi')] }), signal: client.signal })
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toBe('text/event-stream')
    expect(response.headers.get('x-vercel-ai-ui-message-stream')).toBe('v1')
    const reader = response.body!.getReader()
    let received = ''
    while (!received.includes('"delta":"hello "')) received += new TextDecoder().decode((await reader.read()).value)
    expect(received).toMatch(/^data: \{"type":"start"/)
    const turn = h.engine.activeTurn('chat-n')!
    client.abort()
    expect(await turn.done).toMatchObject({ outcome: 'aborted' })
  } finally {
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
  }
})

test('resume while a tool waits for approval: the GET replays the turn and ends on the approval request', async () => {
  const transport = await setup({ onDisconnect: 'detach' })
  h.server.tool('deploy', { env: 'prod' }, { id: 'call_w' })
  h.server.text('ok')
  await decode(await transport.sendMessages({ chatId: 'chat-w', messages: [userMessage('ship')], trigger: 'submit-message', messageId: undefined, abortSignal: undefined }))
  const { message, types } = await decode((await transport.reconnectToStream({ chatId: 'chat-w' }))!)
  expect(message.parts.find((p) => p.type === 'tool-deploy')).toMatchObject({ state: 'approval-requested', approval: { id: 'call_w' } })
  expect(message.parts.find((p) => p.type === 'data-turn-state')).toMatchObject({ data: { state: 'awaiting-approval' } })
  expect(types.at(-1)).toBe('finish')
  await h.engine.deny(h.engine.activeTurn('chat-w')!.id, 'call_w')
})

test('a compaction shows as a data-compaction marker; the summary text stays server-side', async () => {
  const transport = await setup()
  h.server.text('first answer')
  h.server.error(400, { error: { code: 'context_length_exceeded', message: 'too long' } })
  h.server.text('SUMMARY of the conversation')
  h.server.text('second answer')
  await decode(await transport.sendMessages({ chatId: 'chat-c', messages: [userMessage('one')], trigger: 'submit-message', messageId: undefined, abortSignal: undefined }))
  const { message, states } = await decode(
    await transport.sendMessages({ chatId: 'chat-c', messages: [userMessage('two')], trigger: 'submit-message', messageId: undefined, abortSignal: undefined }),
  )
  expect(states.map((s) => s.state)).toContain('compacting')
  expect(message.parts.filter((p) => p.type === 'data-compaction')).toHaveLength(1)
  expect(textOf(message)).toBe('second answer')
  const stored = toUIMessages(await h.engine.messages('chat-c'))
  expect(stored.find((m) => m.metadata?.summary)).toBeDefined()
})
