/**
 * Run trees through the chat handler: the parent's UI message stream shows its child's progress
 * inside the agent tool's part (preliminary tool results), a child's approval request appears in
 * the parent's chat and is answered there (the handler finds the child turn that waits), a
 * forged answer for another chat's child is refused, and DELETE aborts the whole tree.
 * Requests go through the AI SDK's DefaultChatTransport, responses are read with readUIMessageStream.
 */
import { DefaultChatTransport, readUIMessageStream, type UIMessage, type UIMessageChunk } from 'ai'
import { z } from 'zod'
import { agentTool, createChatHandler, type ChatHandler, type TurnchartUIMessage } from '../../src'
import { deployTool } from '../support/deploy-tool'
import { createHarness, type Harness } from '../support/harness'

let h: Harness
let handler: ChatHandler
afterEach(async () => {
  handler?.close()
  await h?.close()
})

const { deploy, deployed } = deployTool()
const ops = agentTool({ description: 'The ops agent', inputSchema: z.object({ task: z.string() }), tools: ['deploy'], toPrompt: ({ task }) => task })

async function setup() {
  deployed.length = 0
  h = await createHarness({ tools: { ops, deploy } })
  handler = createChatHandler(h.engine)
  return new DefaultChatTransport<UIMessage>({
    api: 'http://127.0.0.1/api/chat',
    fetch: (async (input: string | URL, init?: RequestInit) => handler(new Request(input, init))) as typeof fetch,
  })
}

const user = (id: string, text: string): UIMessage => ({ id, role: 'user', parts: [{ type: 'text', text }] })

async function decode(stream: ReadableStream<UIMessageChunk>, message?: UIMessage) {
  const chunks: UIMessageChunk[] = []
  const tapped = stream.pipeThrough(new TransformStream<UIMessageChunk, UIMessageChunk>({ transform: (chunk, c) => (chunks.push(chunk), c.enqueue(chunk)) }))
  let last: UIMessage | undefined
  for await (const snapshot of readUIMessageStream({ stream: tapped, message })) last = snapshot
  return { message: last as TurnchartUIMessage, chunks }
}

const send = async (transport: DefaultChatTransport<UIMessage>, chatId: string, messages: UIMessage[], message?: UIMessage) =>
  decode(await transport.sendMessages({ chatId, messages, trigger: 'submit-message', messageId: undefined, abortSignal: undefined }), message)

test("a child's approval is asked in the parent's chat and answered there; its progress shows in the agent tool's part", async () => {
  const transport = await setup()
  h.server.tool('ops', { task: 'deploy to prod' }, { id: 'call_ops' })
  h.server.push({ type: 'stream', chunks: [{ text: 'Deploying now.' }, { tool: { name: 'deploy', input: { env: 'prod' }, id: 'call_deploy' } }] })
  h.server.text('Deployed.')
  h.server.text('The ops agent deployed to prod.')
  const first = user('u-1', 'ship it')
  const asked = await send(transport, 'chat-t', [first])
  // The agent tool's part shows the child's progress (preliminary results), then the child's call waits for approval.
  const preliminary = asked.chunks.filter((c) => c.type === 'tool-output-available' && c.toolCallId === 'call_ops')
  expect(preliminary.length).toBeGreaterThan(0)
  expect(preliminary.every((c) => (c as { preliminary?: boolean }).preliminary === true)).toBe(true)
  expect(preliminary).toContainEqual(expect.objectContaining({ output: expect.objectContaining({ text: 'Deploying now.' }) }))
  expect(asked.message.parts.find((p) => p.type === 'tool-deploy')).toMatchObject({ state: 'approval-requested', toolCallId: 'call_deploy' })
  expect(asked.chunks.at(-1)).toMatchObject({ type: 'finish' })
  expect(deployed).toEqual([])

  const answered: UIMessage = {
    ...asked.message,
    parts: asked.message.parts.map((p) => (p.type === 'tool-deploy' ? { ...p, state: 'approval-responded', approval: { id: 'call_deploy', approved: true } } : p)) as UIMessage['parts'],
  }
  const rest = await send(transport, 'chat-t', [first, answered], answered)
  expect(deployed).toEqual(['prod'])
  expect(rest.message.parts.find((p) => p.type === 'tool-deploy')).toMatchObject({ state: 'output-available', output: 'deployed to prod' })
  expect(rest.message.parts.find((p) => p.type === 'tool-ops')).toMatchObject({ state: 'output-available', output: 'Deployed.' })
  expect(rest.message.parts.filter((p) => p.type === 'text').map((p) => (p as { text: string }).text)).toContain('The ops agent deployed to prod.')
})

test("an answer naming another chat's child call is refused, and that child still waits", async () => {
  const transport = await setup()
  h.server.tool('ops', { task: 'deploy' }, { id: 'call_ops' })
  h.server.tool('deploy', { env: 'victim' }, { id: 'call_victim' })
  const victim = await send(transport, 'chat-victim', [user('u-1', 'ship it')])
  expect(victim.message.parts.find((p) => p.type === 'tool-deploy')).toMatchObject({ state: 'approval-requested' })
  h.server.tool('ops', { task: 'deploy' }, { id: 'call_ops2' })
  h.server.tool('deploy', { env: 'attacker' }, { id: 'call_attacker' })
  const own = await send(transport, 'chat-attacker', [user('u-1', 'ship it')])
  const [child] = await h.engine.childTurns(h.engine.activeTurn('chat-victim')!.id)
  // The attacker answers the victim's call, naming the victim's child turn in the metadata.
  const forged: UIMessage = {
    ...own.message,
    metadata: { turnId: child.id },
    parts: [{ type: 'tool-deploy', toolCallId: 'call_victim', state: 'approval-responded', input: { env: 'victim' }, approval: { id: 'call_victim', approved: true } } as UIMessage['parts'][number]],
  }
  const response = await handler(new Request('http://127.0.0.1/api/chat', { method: 'POST', body: JSON.stringify({ id: 'chat-attacker', messages: [user('u-1', 'ship it'), forged] }) }))
  expect(response.status).toBe(403)
  expect(await response.json()).toMatchObject({ error: { name: 'TurnNotInChatError' } })
  expect(deployed).toEqual([])
  expect(await h.engine.getTurn(child.id)).toMatchObject({ state: 'awaiting-approval', outcome: null })
})

test('DELETE of the chat aborts the parent and its child', async () => {
  const transport = await setup()
  h.server.tool('ops', { task: 'deploy' }, { id: 'call_ops' })
  h.server.tool('deploy', { env: 'prod' }, { id: 'call_deploy' })
  await send(transport, 'chat-d', [user('u-1', 'ship it')])
  const parent = h.engine.activeTurn('chat-d')!
  const [child] = await h.engine.childTurns(parent.id)
  const response = await handler(new Request('http://127.0.0.1/api/chat/chat-d/stream', { method: 'DELETE' }))
  expect(response.status).toBe(204)
  await h.waitForEvent((e) => e.type === 'turn.transition' && e.turnId === child.id && e.to === 'aborted')
  expect(await h.engine.getTurn(parent.id)).toMatchObject({ outcome: 'aborted' })
  expect(await h.engine.getTurn(child.id)).toMatchObject({ outcome: 'aborted', error: { name: 'MessageAbortedError' } })
})
