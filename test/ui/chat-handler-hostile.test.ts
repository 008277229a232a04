/**
 * The chat handler driven by a hostile client (issue 26): forged approvals naming another chat's
 * turn, other users' chat ids under a cookie-based `authorize`, malformed bodies and ids, a
 * broken `authorize`, `newSession` and `onError`, and useChat file parts. Each test asserts what
 * a user would observe: the status, the rows (sessions, turns, tool runs), the provider calls.
 */
import type { UIMessage } from 'ai'
import { createChatHandler, toUIMessages, type ChatHandler, type ChatHandlerOptions } from '../../src'
import { deployTool } from '../support/deploy-tool'
import { createHarness, type Harness } from '../support/harness'
import { unhandledRejectionsDuring } from '../support/unhandled-rejections'

let h: Harness
let handler: ChatHandler
afterEach(async () => {
  handler?.close()
  await h?.close()
})

const { deploy, deployed } = deployTool()

async function setup(options: ChatHandlerOptions = {}, engineOptions: Parameters<typeof createHarness>[0] = {}) {
  deployed.length = 0
  h = await createHarness({ tools: { deploy }, ...(engineOptions as object) })
  handler = createChatHandler(h.engine, options)
}

const api = 'http://127.0.0.1/api/chat'
const user = (text: string, extra: UIMessage['parts'] = []): UIMessage => ({ id: `u-${text.length}`, role: 'user', parts: [{ type: 'text', text }, ...extra] })
const post = (body: unknown, headers: Record<string, string> = {}) =>
  handler(new Request(api, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: typeof body === 'string' ? body : JSON.stringify(body) }))
const get = (path: string, headers: Record<string, string> = {}) => handler(new Request(`${api}/${path}`, { headers }))
const del = (path: string, headers: Record<string, string> = {}) => handler(new Request(`${api}/${path}`, { method: 'DELETE', headers }))

/** Runs a turn in `chatId` to its approval request; returns the turn id. */
async function awaitingApproval(chatId: string, callId: string, headers: Record<string, string> = {}): Promise<string> {
  h.server.tool('deploy', { env: chatId }, { id: callId })
  const response = await post({ id: chatId, messages: [user(`deploy ${chatId}`)] }, headers)
  expect(response.status).toBe(200)
  await response.text() // the stream ends at the approval request
  const turn = h.engine.activeTurn(chatId)!
  expect(await h.engine.getTurn(turn.id)).toMatchObject({ state: 'awaiting-approval' })
  return turn.id
}

/** The assistant message useChat re-sends after `addToolApprovalResponse`, naming `turnId` in its metadata. */
const approvalMessage = (turnId: string, callId: string, approved: boolean): UIMessage => ({
  id: 'a-1',
  role: 'assistant',
  metadata: { turnId },
  parts: [{ type: 'tool-deploy', toolCallId: callId, state: 'approval-responded', input: { env: 'x' }, approval: { id: callId, approved, ...(approved ? {} : { reason: 'no' }) } } as UIMessage['parts'][number]],
})

describe('only the chat’s own turns', () => {
  test.each([
    ['an approval', true],
    ['a denial', false],
  ])('%s naming another chat’s turn is refused with 403 TurnNotInChatError, and that turn is untouched', async (_name, approved) => {
    await setup()
    const victim = await awaitingApproval('chat-b', 'call_b')
    await awaitingApproval('chat-a', 'call_a') // the attacker's own chat waits too
    const forged = await post({ id: 'chat-a', messages: [user('deploy chat-a'), approvalMessage(victim, 'call_b', approved)] })
    expect(forged.status).toBe(403)
    expect(await forged.json()).toEqual({ error: expect.objectContaining({ name: 'TurnNotInChatError', chatId: 'chat-a', turnId: victim }) })
    expect(deployed).toEqual([])
    expect(await h.engine.getTurn(victim)).toMatchObject({ state: 'awaiting-approval', outcome: null })
    expect((await h.engine.readStatus('chat-b'))).toMatchObject({ type: 'busy', state: 'awaiting-approval', approvals: [expect.objectContaining({ callId: 'call_b' })] })
    expect((await h.engine.transitions(victim)).map((r) => r.to)).toEqual(['step-gate', 'streaming', 'awaiting-approval'])
    // The victim's own page still decides its call.
    h.server.text('done')
    const own = await post({ id: 'chat-b', messages: [user('deploy chat-b'), approvalMessage(victim, 'call_b', true)] })
    expect(own.status).toBe(200)
    await own.text()
    expect(deployed).toEqual(['chat-b'])
  })

  test('a turn id that names no turn gets the same 403 as another chat’s (a client cannot probe for ids)', async () => {
    await setup()
    await awaitingApproval('chat-a', 'call_a')
    for (const turnId of ['trn_01J000000000000000000000', 'x'.repeat(300), '']) {
      const response = await post({ id: 'chat-a', messages: [user('deploy chat-a'), approvalMessage(turnId, 'call_a', true)] })
      if (turnId === '') {
        // An empty turn id falls back to the chat's running turn, which is its own.
        expect(response.status).toBe(200)
        await response.text()
        continue
      }
      expect(response.status).toBe(403)
      expect(await response.json()).toMatchObject({ error: { name: 'TurnNotInChatError' } })
    }
  })
})

/** A cookie-based user, as an app would have it: `session=<user>` (a signed session id in a real app). */
const userOf = (request: Request) => /(?:^|;\s*)session=(\w+)/.exec(request.headers.get('cookie') ?? '')?.[1]
const as = (name: string) => ({ cookie: `session=${name}` })

describe('authorize', () => {
  function ownerOnly(calls: Array<[string, string, string | undefined]> = []): ChatHandlerOptions {
    return {
      authorize: async (request, chatId) => {
        calls.push([request.method, chatId, userOf(request)])
        const me = userOf(request)
        if (!me) return false
        const session = await h.engine.getSession(chatId)
        return session === undefined || session.metadata?.owner === me // a new chat becomes its creator's
      },
      newSession: (request) => ({ metadata: { owner: userOf(request) } }),
    }
  }

  test('a chat created by a user carries them as owner; another user gets 403 on every route and nothing happens', async () => {
    const calls: Array<[string, string, string | undefined]> = []
    await setup(ownerOnly(calls))
    h.server.push({ type: 'stream', chunks: [{ text: 'working ' }], end: 'hang' })
    const alice = await post({ id: 'chat-alice', messages: [user('hello')] }, as('alice'))
    expect(alice.status).toBe(200)
    const reading = alice.text()
    await h.waitForEvent((e) => e.type === 'part.delta')
    expect(await h.engine.getSession('chat-alice')).toMatchObject({ metadata: { owner: 'alice' } })
    const turn = h.engine.activeTurn('chat-alice')!
    const callsBefore = h.server.calls

    const attempts = [
      await post({ id: 'chat-alice', messages: [user('take over')] }, as('mallory')),
      await post({ id: 'chat-alice', messages: [user('anonymous')] }),
      await get('chat-alice/messages', as('mallory')),
      await get('chat-alice/stream', as('mallory')),
      await del('chat-alice/stream', as('mallory')),
    ]
    for (const response of attempts) {
      expect(response.status).toBe(403)
      expect(await response.json()).toEqual({ error: expect.objectContaining({ name: 'ChatAccessDeniedError', chatId: 'chat-alice' }) })
    }
    expect(calls.filter(([, , who]) => who !== 'alice').map(([method]) => method)).toEqual(['POST', 'POST', 'GET', 'GET', 'DELETE'])
    // Nothing happened: the turn runs on, no new message, no new provider call.
    expect(h.engine.activeTurn('chat-alice')?.id).toBe(turn.id)
    expect((await h.engine.messages('chat-alice')).filter((m) => m.info.role === 'user')).toHaveLength(1)
    expect(h.server.calls).toBe(callsBefore)
    // The owner's own stop goes through.
    expect((await del('chat-alice/stream', as('alice'))).status).toBe(204)
    expect(await turn.done).toMatchObject({ outcome: 'aborted' })
    await reading
    expect((await get('chat-alice/messages', as('alice'))).status).toBe(200)
  })

  test('a new chat created by another request at the same moment is authorized again, as the chat it now is', async () => {
    const options = ownerOnly()
    await setup({
      ...options,
      // Alice's request creates the chat between Mallory's authorize (no chat yet) and Mallory's create.
      newSession: async (request, chatId) => {
        await h.engine.createSession({ id: chatId, metadata: { owner: 'alice' } })
        return options.newSession!(request, chatId)
      },
    })
    const response = await post({ id: 'chat-race', messages: [user('mine now')] }, as('mallory'))
    expect(response.status).toBe(403)
    expect(await h.engine.getSession('chat-race')).toMatchObject({ metadata: { owner: 'alice' } })
    expect(await h.engine.messages('chat-race')).toEqual([])
    expect(h.server.calls).toBe(0)
  })

  test("docs/web.md's cookie pattern: a cross-site POST carrying the user's cookie is refused by the Origin check; a forged approval too", async () => {
    const app = 'https://chat.example.com'
    const owner = ownerOnly()
    await setup({
      ...owner,
      authorize: async (request, chatId) => {
        if (request.method !== 'GET' && request.headers.get('origin') !== app) return false
        return owner.authorize!(request, chatId)
      },
    })
    const turnId = await awaitingApproval('chat-own', 'call_own', { ...as('alice'), origin: app })
    // Another site's page, with Alice's cookie attached by her browser.
    const crossSite = { ...as('alice'), origin: 'https://evil.example' }
    expect((await post({ id: 'chat-own', messages: [user('deploy chat-own'), approvalMessage(turnId, 'call_own', true)] }, crossSite)).status).toBe(403)
    expect((await post({ id: 'chat-evil', messages: [user('spend her tokens')] }, crossSite)).status).toBe(403)
    expect((await post({ id: 'chat-evil', messages: [user('no origin at all')] }, as('alice'))).status).toBe(403)
    expect(deployed).toEqual([])
    expect(await h.engine.getTurn(turnId)).toMatchObject({ state: 'awaiting-approval' })
    expect(await h.engine.getSession('chat-evil')).toBeUndefined()
    h.server.text('deployed')
    const own = await post({ id: 'chat-own', messages: [user('deploy chat-own'), approvalMessage(turnId, 'call_own', true)] }, { ...as('alice'), origin: app })
    expect(own.status).toBe(200)
    await own.text()
    expect(deployed).toEqual(['chat-own'])
  })

  test('false on a new chat: no session is created, no turn started, no provider called', async () => {
    await setup({ authorize: () => false })
    const response = await post({ id: 'chat-new', messages: [user('hi')] })
    expect(response.status).toBe(403)
    expect(await h.engine.getSession('chat-new')).toBeUndefined()
    expect(await h.engine.listSessions()).toEqual([])
    expect(h.server.calls).toBe(0)
  })

  test('only true lets a request through: "yes", 1 or an object answer 403', async () => {
    for (const answer of ['yes', 1, {}, null]) {
      await setup({ authorize: () => answer as never })
      expect((await post({ id: 'chat-x', messages: [user('hi')] })).status).toBe(403)
      expect((await get('chat-x/messages')).status).toBe(403)
      handler.close()
      await h.close()
    }
    h = undefined as never
  })

  test.each([
    [
      'throws',
      () => {
        throw new Error('auth service down')
      },
    ],
    ['rejects', async () => Promise.reject(new Error('auth service down'))],
  ])('an authorize that %s answers 500 with no detail, tells onError (HookError), and does nothing', async (_how, authorize) => {
    const errors: unknown[] = []
    await setup({ authorize, onError: (error) => void errors.push(error) })
    let responses: Response[] = []
    const unhandled = await unhandledRejectionsDuring(async () => {
      responses = [await post({ id: 'chat-z', messages: [user('hi')] }), await get('chat-z/messages'), await del('chat-z/stream')]
    })
    expect(unhandled).toEqual([])
    for (const response of responses) {
      expect(response.status).toBe(500)
      expect(await response.json()).toEqual({ error: { name: 'InternalError', message: 'the chat handler failed; see the server log' } })
    }
    expect(errors).toHaveLength(3)
    expect(errors[0]).toMatchObject({ name: 'HookError', hook: 'authorize', message: 'authorize threw: auth service down' })
    expect(await h.engine.getSession('chat-z')).toBeUndefined()
    expect(h.server.calls).toBe(0)
  })

  test('a newSession that throws answers 500 through onError; no session, no turn', async () => {
    const errors: unknown[] = []
    await setup({
      newSession: () => {
        throw new Error('no user')
      },
      onError: (error) => void errors.push(error),
    })
    const response = await post({ id: 'chat-n', messages: [user('hi')] })
    expect(response.status).toBe(500)
    expect(errors).toEqual([expect.objectContaining({ name: 'HookError', hook: 'newSession' })])
    expect(await h.engine.getSession('chat-n')).toBeUndefined()
    expect(h.server.calls).toBe(0)
  })

  test('an onError that throws or rejects changes nothing: still a 500, no unhandled rejection', async () => {
    for (const onError of [
      () => {
        throw new Error('logger down')
      },
      async () => Promise.reject(new Error('logger down')),
    ]) {
      await setup({
        authorize: () => {
          throw new Error('auth down')
        },
        onError,
      })
      let status = 0
      const unhandled = await unhandledRejectionsDuring(async () => {
        status = (await post({ id: 'chat-o', messages: [user('hi')] })).status
      })
      expect(unhandled).toEqual([])
      expect(status).toBe(500)
      handler.close()
      await h.close()
    }
    h = undefined as never
  })

  test('hooks that are not functions, and a maxBodyBytes that is not a whole number of bytes, are refused at creation', async () => {
    await setup()
    expect(() => createChatHandler(h.engine, { authorize: true as never })).toThrow('invalid option authorize: expected a function')
    expect(() => createChatHandler(h.engine, { onError: 'log' as never })).toThrow('invalid option onError: expected a function')
    expect(() => createChatHandler(h.engine, { maxBodyBytes: 0 })).toThrow('invalid option maxBodyBytes')
    expect(() => createChatHandler(h.engine, { maxBodyBytes: 1.5 })).toThrow('invalid option maxBodyBytes')
  })
})

describe('malformed requests', () => {
  test.each([
    ['not JSON', '{"id": "chat-m", "messages": ['],
    ['no messages', { id: 'chat-m' }],
    ['an empty message list', { id: 'chat-m', messages: [] }],
    ['a null last message', { id: 'chat-m', messages: [null] }],
    ['a message without parts', { id: 'chat-m', messages: [{ id: 'u', role: 'user' }] }],
    ['a system message last', { id: 'chat-m', messages: [{ id: 'u', role: 'system', parts: [] }] }],
    ['a chat id with a path in it', { id: '../../etc/passwd', messages: [user('hi')] }],
    ['a chat id with a NUL', { id: 'chat\u0000m', messages: [user('hi')] }],
    ['a 201-character chat id', { id: 'c'.repeat(201), messages: [user('hi')] }],
    ['a user message with no text and no file', { id: 'chat-m', messages: [{ id: 'u', role: 'user', parts: [{ type: 'text', text: '  ' }] }] }],
    ['a file part with a javascript: URL', { id: 'chat-m', messages: [user('look', [{ type: 'file', mediaType: 'text/plain', url: 'javascript:alert(1)' }])] }],
    ['a file part without a media type', { id: 'chat-m', messages: [user('look', [{ type: 'file', url: 'data:,hi' } as never])] }],
    ['a denial whose reason is not a string', { id: 'chat-m', messages: [user('x'), { ...approvalMessage('', 'call_1', false), parts: [{ type: 'tool-deploy', toolCallId: 42, state: 'approval-responded', input: {}, approval: { id: 'x', approved: false, reason: { evil: true } } }] }] }],
  ])('%s → 400, nothing stored, no provider call', async (_name, body) => {
    const authorize = jest.fn(() => true)
    await setup({ authorize })
    const response = await post(body)
    expect([400, 409]).toContain(response.status) // a denial with no running turn: 409 ApprovalNotPendingError
    if (response.status === 400) expect(await response.json()).toMatchObject({ error: { name: expect.stringMatching(/InvalidRequest|InvalidArgumentError/) } })
    expect(await h.engine.listSessions()).toEqual([])
    expect(h.server.calls).toBe(0)
  })

  test('malformed route ids: a bad %-escape is 404, an id that is not a chat id is 400, before authorize is asked', async () => {
    const authorize = jest.fn(() => true)
    await setup({ authorize })
    expect((await get('%E0%A4%A/messages')).status).toBe(404)
    expect((await get(`${'c'.repeat(201)}/messages`)).status).toBe(400)
    expect((await get('chat%00x/stream')).status).toBe(400)
    expect((await handler(new Request(`${api}/chat-1/stream`, { method: 'PUT' }))).status).toBe(405)
    expect(authorize).not.toHaveBeenCalled()
  })
})

describe('files from useChat', () => {
  // A 1×1 PNG and a text file, as useChat sends them: data: URLs of their bytes.
  const png = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64')
  const notes = 'line one\nline two'
  const fileParts = [
    { type: 'file', mediaType: 'image/png', filename: 'dot.png', url: `data:image/png;base64,${png.toString('base64')}` },
    { type: 'file', mediaType: 'text/plain', filename: 'notes.txt', url: `data:text/plain;base64,${Buffer.from(notes).toString('base64')}` },
  ] as UIMessage['parts']

  test('file parts become the prompt’s image and file parts: sent to the provider, stored, and returned by GET messages', async () => {
    await setup()
    h.server.text('I see a dot and two lines.')
    const response = await post({ id: 'chat-f', messages: [user('what are these?', fileParts)] })
    expect(response.status).toBe(200)
    await response.text()
    // What the model received (the OpenAI-compatible encoding of an image and a text file).
    const sent = (h.server.requests[0].body as { messages: Array<{ role: string; content: unknown }> }).messages.find((m) => m.role === 'user')!.content
    expect(sent).toEqual([
      { type: 'text', text: 'what are these?' },
      { type: 'image_url', image_url: { url: `data:image/png;base64,${png.toString('base64')}` } },
      { type: 'text', text: notes },
    ])
    const [stored] = await h.engine.messages('chat-f')
    expect(stored.parts.map((p) => p.type)).toEqual(['text', 'file', 'file'])
    expect(stored.parts[1]).toMatchObject({ type: 'file', image: true, mediaType: 'image/png', data: png.toString('base64') })
    expect(stored.parts[2]).toMatchObject({ type: 'file', mediaType: 'text/plain', filename: 'notes.txt', data: Buffer.from(notes).toString('base64') })
    const history = (await (await get('chat-f/messages')).json()) as UIMessage[]
    expect(history[0].parts).toEqual([{ type: 'text', text: 'what are these?', state: 'done' }, ...fileParts.map((p) => (p.type === 'file' && p.mediaType === 'image/png' ? { type: 'file', mediaType: 'image/png', url: p.url } : p))])
    expect(toUIMessages(await h.engine.messages('chat-f'))[0].parts).toHaveLength(3)
  })

  test('a file over the engine’s maxFileBytes is refused with 413 FileTooLargeError before the chat is created', async () => {
    await setup({}, { maxFileBytes: 1000 })
    const big = [{ type: 'file', mediaType: 'application/pdf', filename: 'big.pdf', url: `data:application/pdf;base64,${Buffer.alloc(3000, 1).toString('base64')}` }] as UIMessage['parts']
    const response = await post({ id: 'chat-big', messages: [user('read this', big)] })
    expect(response.status).toBe(413)
    expect(await response.json()).toMatchObject({ error: { name: 'FileTooLargeError', limit: 1000, mediaType: 'application/pdf' } })
    expect(await h.engine.getSession('chat-big')).toBeUndefined()
    expect(h.server.calls).toBe(0)
  })

  test('a message of files only (no text) starts a turn', async () => {
    await setup()
    h.server.text('a dot')
    const response = await post({ id: 'chat-only', messages: [{ id: 'u', role: 'user', parts: [fileParts[0]] }] })
    expect(response.status).toBe(200)
    await response.text()
    expect((await h.engine.messages('chat-only'))[0].parts.map((p) => p.type)).toEqual(['file'])
  })
})
