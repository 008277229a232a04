/**
 * Human in the loop through the chat handler (issue 25): a user message POSTed while the chat's
 * turn runs steers it (`whenBusy: 'steer'`) and the running stream shows it; an approval response
 * carries an edited input (`approvalInputs`); a denial's reason reaches the stream. Requests go
 * through the AI SDK's DefaultChatTransport, responses are read with readUIMessageStream.
 */
import { DefaultChatTransport, readUIMessageStream, tool, type UIMessage, type UIMessageChunk } from 'ai'
import { z } from 'zod'
import { createChatHandler, InvalidOptionError, type ChatHandler, type ChatHandlerOptions, type TurnchartUIMessage } from '../../src'
import { deferred } from '../../src/core/deferred'
import { createHarness, type Harness } from '../support/harness'

let h: Harness
let handler: ChatHandler
afterEach(async () => {
  handler?.close()
  await h?.close()
})

let release = deferred<void>()
let started = deferred<void>()
const checks = tool({
  description: 'Run the checks',
  inputSchema: z.object({}),
  execute: async () => {
    started.resolve()
    await release.promise
    return 'checks ran'
  },
})
const deployed: string[] = []
const deploy = tool({
  description: 'Deploy',
  inputSchema: z.object({ env: z.enum(['staging', 'production']) }),
  needsApproval: true,
  execute: async ({ env }) => {
    deployed.push(env)
    return `deployed to ${env}`
  },
})

async function setup(options: ChatHandlerOptions = {}) {
  deployed.length = 0
  release = deferred<void>()
  started = deferred<void>()
  h = await createHarness({ tools: { checks, deploy }, editableApprovals: ['deploy'] })
  handler = createChatHandler(h.engine, options)
  return new DefaultChatTransport<UIMessage>({
    api: 'http://127.0.0.1/api/chat',
    fetch: (async (input: string | URL, init?: RequestInit) => handler(new Request(input, init))) as typeof fetch,
  })
}

const user = (id: string, text: string): UIMessage => ({ id, role: 'user', parts: [{ type: 'text', text }] })
const post = (body: unknown) => handler(new Request('http://127.0.0.1/api/chat', { method: 'POST', body: JSON.stringify(body) }))

async function decode(stream: ReadableStream<UIMessageChunk>, message?: UIMessage) {
  const chunks: UIMessageChunk[] = []
  const tapped = stream.pipeThrough(new TransformStream<UIMessageChunk, UIMessageChunk>({ transform: (chunk, c) => (chunks.push(chunk), c.enqueue(chunk)) }))
  let last: UIMessage | undefined
  for await (const snapshot of readUIMessageStream({ stream: tapped, message })) last = snapshot
  return { message: last as TurnchartUIMessage, chunks }
}

test("whenBusy 'steer': a message POSTed while the turn runs is taken at its next step boundary; the running stream shows it and goes on", async () => {
  const transport = await setup({ whenBusy: 'steer' })
  h.server.tool('checks', {}, { id: 'call_c' })
  h.server.text('Checked, tests too.')
  const first = user('u-1', 'run the checks')
  const running = decode(await transport.sendMessages({ chatId: 'chat-s', messages: [first], trigger: 'submit-message', messageId: undefined, abortSignal: undefined }))
  await started.promise
  const steer = await post({ id: 'chat-s', messages: [first, user('u-2', 'also the tests')] })
  expect(steer.status).toBe(202)
  const answer = (await steer.json()) as { steered: { id: string; turnId: string } }
  expect(answer.steered.turnId).toBe(h.engine.activeTurn('chat-s')?.id)
  release.resolve()
  const { message } = await running
  expect(message.parts.filter((p) => p.type === 'data-steered')).toEqual([expect.objectContaining({ data: { text: 'also the tests' } })])
  expect(message.parts.filter((p) => p.type === 'text').map((p) => (p as { text: string }).text)).toEqual(['Checked, tests too.'])
  const second = h.server.requests[1].body as { messages: Array<{ role: string; content: unknown }> }
  expect(second.messages.filter((m) => m.role === 'user').map((m) => m.content)).toEqual(['run the checks', 'also the tests'])
  // Resuming the stream mid-turn would replay the steered message too: it is part of the turn's mirror.
  const stored = await (await handler(new Request('http://127.0.0.1/api/chat/chat-s/messages'))).json()
  expect((stored as UIMessage[]).map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant'])
})

test("the default stays 409 while a turn runs; whenBusy takes only 'reject' or 'steer'", async () => {
  await setup()
  h.server.hang()
  const first = user('u-1', 'wait')
  const running = await post({ id: 'chat-r', messages: [first] })
  await h.server.waitForCall(1)
  const busy = await post({ id: 'chat-r', messages: [first, user('u-2', 'more')] })
  expect(busy.status).toBe(409)
  expect(await h.engine.queue('chat-r')).toEqual([])
  await h.engine.abort('chat-r')
  await running.text()
  expect(() => createChatHandler(h.engine, { whenBusy: 'enqueue' as never })).toThrow(InvalidOptionError)
})

test('an approval response with approvalInputs runs the tool with the edited input; an edit the schema refuses answers 400 and the call stays pending', async () => {
  const transport = await setup()
  h.server.tool('deploy', { env: 'production' }, { id: 'call_d' })
  h.server.text('Deployed to staging.')
  const first = user('u-1', 'ship it')
  const asked = await decode(await transport.sendMessages({ chatId: 'chat-e', messages: [first], trigger: 'submit-message', messageId: undefined, abortSignal: undefined }))
  const answered: UIMessage = {
    ...asked.message,
    parts: asked.message.parts.map((p) => (p.type === 'tool-deploy' ? { ...p, state: 'approval-responded', approval: { id: 'call_d', approved: true } } : p)) as UIMessage['parts'],
  }
  const refused = await post({ id: 'chat-e', messages: [first, answered], approvalInputs: { call_d: { env: 'moon' } } })
  expect(refused.status).toBe(400)
  expect(await refused.json()).toMatchObject({ error: { name: 'InvalidArgumentError', argument: 'options.input' } })
  expect(deployed).toEqual([])
  const edited = new DefaultChatTransport<UIMessage>({
    api: 'http://127.0.0.1/api/chat',
    body: { approvalInputs: { call_d: { env: 'staging' } } },
    fetch: (async (input: string | URL, init?: RequestInit) => handler(new Request(input, init))) as typeof fetch,
  })
  const rest = await decode(await edited.sendMessages({ chatId: 'chat-e', messages: [first, answered], trigger: 'submit-message', messageId: undefined, abortSignal: undefined }), answered)
  expect(deployed).toEqual(['staging'])
  expect(rest.message.parts.find((p) => p.type === 'tool-deploy')).toMatchObject({ state: 'output-available', output: 'deployed to staging' })
  expect(await post({ id: 'chat-e', messages: [first, answered], approvalInputs: ['not', 'an', 'object'] }).then((r) => r.status)).toBe(400)
})

test("a denial's reason reaches the stream as data-denial, whoever denied", async () => {
  const transport = await setup()
  h.server.tool('deploy', { env: 'production' }, { id: 'call_x' })
  h.server.text('Understood, not deploying.')
  const first = user('u-1', 'ship it')
  await decode(await transport.sendMessages({ chatId: 'chat-d', messages: [first], trigger: 'submit-message', messageId: undefined, abortSignal: undefined }))
  // Another tab (or the server) denies; this page reattaches and sees why.
  const turnId = h.engine.activeTurn('chat-d')!.id
  await h.engine.deny(turnId, 'call_x', 'not on a Friday')
  const { message, chunks } = await decode((await transport.reconnectToStream({ chatId: 'chat-d' }))!)
  expect(chunks.map((c) => c.type)).toContain('tool-output-denied')
  expect(message.parts.find((p) => p.type === 'data-denial')).toMatchObject({ id: 'denial-call_x', data: { toolCallId: 'call_x', reason: 'not on a Friday' } })
})
