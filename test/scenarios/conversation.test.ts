/**
 * The conversation API (issue 16): per-prompt options and session defaults reaching the
 * request, images and files sent as the provider encodes them, the step limit, turn and
 * session usage, and the history operations (rename, delete, revert, fork), on SQLite and
 * PostgreSQL through the scripted OpenAI-compatible server.
 */
import { createOpenAICompatible } from '@ai-sdk/openai-compatible'
import { tool } from 'ai'
import { z } from 'zod'
import { FileTooLargeError, InvalidArgumentError, MessageNotFoundError, SessionBusyError, SessionNotFoundError, turnOfTool } from '../../src'
import { createHarness, modelFor, type Harness } from '../support/harness'

let h: Harness
afterEach(async () => {
  await h?.close()
})

const seen: Array<{ tool: string; sessionId: string; turnId: string; aborted: boolean }> = []
const tools = {
  search: tool({
    description: 'Search the web',
    inputSchema: z.object({ q: z.string() }),
    execute: async ({ q }, options) => {
      seen.push({ tool: 'search', ...turnOfTool(options), aborted: options.abortSignal?.aborted ?? true })
      return `results for ${q}`
    },
  }),
  calc: tool({ description: 'Calculate', inputSchema: z.object({ expr: z.string() }), execute: async () => '4' }),
}

/** The system message and the tool names of a recorded request body. */
const systemOf = (body: any) => body.messages.find((m: any) => m.role === 'system')?.content
const toolNames = (body: any) => (body.tools ?? []).map((t: any) => t.function.name).sort()
const userMessages = (body: any) => body.messages.filter((m: any) => m.role === 'user').map((m: any) => m.content)

test('two sessions on one engine use their own model, system prompt and tools, at once', async () => {
  // one server, two registered models told apart by the model id in the request
  h = await createHarness((server) => ({ tools, system: 'engine system', models: { fast: modelFor(server, 'fast-model') } }))
  const a = await h.engine.createSession({ title: 'a', model: 'fast', system: 'system A', tools: ['search'] })
  const b = await h.engine.createSession({ title: 'b', system: 'system B', tools: ['calc'], settings: { temperature: 0.5 } })
  expect(await h.engine.getSession(a.id)).toMatchObject({ defaults: { model: 'fast', system: 'system A', tools: ['search'] } })
  h.server.hang().hang()
  const ta = h.engine.prompt(a.id, 'hi A')
  const tb = h.engine.prompt(b.id, 'hi B')
  const [r1, r2] = await Promise.all([h.server.waitForCall(1), h.server.waitForCall(2)])
  const byModel = Object.fromEntries([r1, r2].map((r) => [r.body.model, r.body]))
  expect(systemOf(byModel['fast-model'])).toBe('system A')
  expect(toolNames(byModel['fast-model'])).toEqual(['search'])
  expect(byModel['fast-model'].temperature).toBeUndefined()
  expect(systemOf(byModel['test-model'])).toBe('system B')
  expect(toolNames(byModel['test-model'])).toEqual(['calc'])
  expect(byModel['test-model'].temperature).toBe(0.5)
  ta.abort()
  tb.abort()
  await Promise.all([ta.done, tb.done])
  // a prompt's options win over the session's, and are stored with the turn
  h.server.text('ok')
  const turn = h.engine.prompt(a.id, 'again', { model: 'default', system: 'per prompt', tools: ['calc', 'search'] })
  await turn.done
  const body = h.server.requests[2].body
  expect(body.model).toBe('test-model')
  expect(systemOf(body)).toBe('per prompt')
  expect(toolNames(body)).toEqual(['calc', 'search'])
})

test('unknown model or tool names and bad settings are refused at once, naming the option', async () => {
  h = await createHarness({ tools })
  const s = await h.engine.createSession()
  expect(() => h.engine.prompt(s.id, 'x', { model: 'smart' })).toThrow(/options\.model.*registered model \(default\)/)
  expect(() => h.engine.prompt(s.id, 'x', { tools: ['nope'] })).toThrow(InvalidArgumentError)
  expect(() => h.engine.prompt(s.id, 'x', { temperature: 'hot' as never })).toThrow(/options\.temperature/)
  expect(() => h.engine.prompt(s.id, 'x', { maxSteps: 0 })).toThrow(/options\.maxSteps/)
  expect(() => h.engine.prompt(s.id, 'x', { temprature: 1 } as never)).toThrow(/options\.temprature/)
  await expect(h.engine.createSession({ model: 'smart' })).rejects.toThrow(/session\.model/)
  await expect(h.engine.createSession({ settings: { headers: { a: 'b' } } as never })).rejects.toThrow(/never stored/)
  expect(h.server.calls).toBe(0)
})

test('call settings appear in the request body; maxOutputTokens defaults to limits.output; headers are sent, not stored', async () => {
  h = await createHarness({ tools })
  const s = await h.engine.createSession()
  h.server.text('one').text('two')
  await h.engine.prompt(s.id, 'defaults').done
  expect(h.server.requests[0].body).toMatchObject({ max_tokens: 10_000 })
  const turn = h.engine.prompt(s.id, 'settings', {
    temperature: 0.2,
    maxOutputTokens: 321,
    topP: 0.9,
    seed: 42,
    stopSequences: ['END'],
    presencePenalty: 0.1,
    frequencyPenalty: 0.3,
    headers: { 'x-trace': 'abc' },
    providerOptions: { scripted: { custom_flag: true } },
    toolChoice: { type: 'tool', toolName: 'calc' },
  })
  await turn.done
  const { body, headers } = h.server.requests[1]
  expect(body).toMatchObject({
    temperature: 0.2,
    max_tokens: 321,
    top_p: 0.9,
    seed: 42,
    stop: ['END'],
    presence_penalty: 0.1,
    frequency_penalty: 0.3,
    custom_flag: true,
    tool_choice: { type: 'function', function: { name: 'calc' } },
  })
  expect(headers['x-trace']).toBe('abc')
  // the turn names what it used; the headers (maybe secret) are not stored
  const stored = await h.engine.getTurn(turn.id)
  expect(stored!.options).toMatchObject({ model: 'default', settings: { temperature: 0.2, maxOutputTokens: 321, providerOptions: { scripted: { custom_flag: true } } } })
  expect(JSON.stringify(stored)).not.toContain('x-trace')
})

test('an image and a file reach the server as the provider encodes them, and are stored as parts', async () => {
  // image URLs the provider takes as they are (others the AI SDK downloads first)
  h = await createHarness((server) => ({
    model: createOpenAICompatible({ name: 'scripted', baseURL: server.url, apiKey: 'k', includeUsage: true, supportedUrls: () => ({ 'image/*': [/^https:\/\//] }) })('test-model'),
  }))
  const s = await h.engine.createSession()
  const png = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex')
  const pdf = Buffer.from('%PDF-1.4 tiny')
  h.server.text('a cat').text('again')
  const turn = h.engine.prompt(s.id, [
    { type: 'text', text: 'What is in these?' },
    { type: 'image', image: png, mediaType: 'image/png' },
    { type: 'file', data: new Uint8Array(pdf), mediaType: 'application/pdf', filename: 'doc.pdf' },
    { type: 'image', image: new URL('https://example.invalid/cat.jpg'), mediaType: 'image/jpeg' },
  ])
  const result = await turn.done
  expect(result.error?.message).toBeUndefined()
  expect(result.outcome).toBe('completed')
  const expected = [
    { type: 'text', text: 'What is in these?' },
    { type: 'image_url', image_url: { url: `data:image/png;base64,${png.toString('base64')}` } },
    { type: 'file', file: { filename: 'doc.pdf', file_data: `data:application/pdf;base64,${pdf.toString('base64')}` } },
    { type: 'image_url', image_url: { url: 'https://example.invalid/cat.jpg' } },
  ]
  expect(userMessages(h.server.requests[0].body)).toEqual([expected])
  const [user] = await h.engine.messages(s.id)
  expect(user.parts.map((p) => p.type)).toEqual(['text', 'file', 'file', 'file'])
  expect(user.parts[1]).toMatchObject({ type: 'file', image: true, mediaType: 'image/png', data: png.toString('base64') })
  expect(user.parts[3]).toMatchObject({ type: 'file', image: true, url: 'https://example.invalid/cat.jpg' })
  // the next turn sends the stored parts again, the same
  await h.engine.prompt(s.id, 'and now?').done
  expect(userMessages(h.server.requests[1].body)).toEqual([expected, 'and now?'])
})

test('bytes over maxFileBytes are refused with FileTooLargeError; a malformed input with InvalidArgumentError', async () => {
  h = await createHarness({ maxFileBytes: 1000 })
  const s = await h.engine.createSession()
  let error: unknown
  try {
    h.engine.prompt(s.id, [{ type: 'file', data: Buffer.alloc(1001), mediaType: 'application/pdf' }])
  } catch (e) {
    error = e
  }
  expect(FileTooLargeError.isInstance(error)).toBe(true)
  expect(error).toMatchObject({ bytes: 1001, limit: 1000, mediaType: 'application/pdf' })
  expect(() => h.engine.prompt(s.id, [{ type: 'file', data: Buffer.alloc(10) } as never])).toThrow(/input\[0\]\.mediaType/)
  expect(() => h.engine.prompt(s.id, [{ type: 'video' } as never])).toThrow(/input\[0\]\.type/)
  expect(() => h.engine.prompt(s.id, [])).toThrow(InvalidArgumentError)
  expect(h.server.calls).toBe(0)
})

test('a runaway tool loop stops at maxSteps: StepLimitError, the last calls not run', async () => {
  h = await createHarness({ tools, maxSteps: 50 })
  const s = await h.engine.createSession()
  for (let i = 0; i < 10; i++) h.server.tool('search', { q: `query ${i}` })
  seen.length = 0
  const result = await h.engine.prompt(s.id, 'search forever', { maxSteps: 3 }).done
  expect(result.outcome).toBe('failed')
  expect(result.error).toMatchObject({ name: 'StepLimitError', maxSteps: 3 })
  expect(h.server.calls).toBe(3)
  expect(seen.map((c) => c.tool)).toEqual(['search', 'search']) // steps 1 and 2 ran their tool; step 3's did not run
  const tools_ = (await h.engine.messages(s.id)).flatMap((m) => m.parts).filter((p) => p.type === 'tool')
  expect(tools_.at(-1)).toMatchObject({ state: { status: 'error', error: 'Tool not run: the turn failed (StepLimitError)' } })
  const transitions = await h.engine.transitions(result.turnId)
  expect(transitions.at(-1)).toMatchObject({ from: 'streaming', event: 'step.finished', to: 'failed' })
})

test('tools receive the session id, the turn id and a live abort signal', async () => {
  h = await createHarness({ tools })
  const s = await h.engine.createSession()
  h.server.tool('search', { q: 'x' }).text('done')
  seen.length = 0
  const turn = h.engine.prompt(s.id, 'go')
  await turn.done
  expect(seen).toEqual([{ tool: 'search', sessionId: s.id, turnId: turn.id, aborted: false }])
})

test('turn.done has the usage and the final text; engine.usage sums turns, the compaction call included', async () => {
  h = await createHarness({ tools, pricing: { input: 1, output: 2 }, limits: { context: 1000, output: 100 } })
  const s = await h.engine.createSession()
  h.server.tool('search', { q: 'x' }, { usage: { input: 100, output: 10 } })
  h.server.text('Found it.', { usage: { input: 200, output: 20 } })
  const first = await h.engine.prompt(s.id, 'find').done
  expect(first.text).toBe('Found it.')
  expect(first.usage).toMatchObject({ turnId: first.turnId, tokens: { input: 300, output: 30 }, compaction: { tokens: { input: 0, output: 0 }, cost: 0 } })
  expect(first.usage.cost).toBeCloseTo((300 * 1 + 30 * 2) / 1e6)
  // the next turn overflows (usable 1000 - 100): a compaction, whose summary call is counted
  h.server.text('big answer', { usage: { input: 950, output: 5 } })
  h.server.text('the summary', { usage: { input: 400, output: 40 } })
  const second = await h.engine.prompt(s.id, 'more').done
  expect(second.outcome).toBe('completed')
  expect(second.usage.tokens).toMatchObject({ input: 1350, output: 45 })
  expect(second.usage.compaction.tokens).toMatchObject({ input: 400, output: 40 })
  const usage = await h.engine.usage(s.id)
  expect(usage.turns.map((t) => t.turnId)).toEqual([first.turnId, second.turnId])
  expect(usage.tokens).toMatchObject({ input: 1650, output: 75 })
  expect(usage.cost).toBeCloseTo((1650 + 75 * 2) / 1e6)
  await expect(h.engine.usage('ses_nope')).rejects.toBeInstanceOf(SessionNotFoundError)
})

test('revert hides later messages from messages() and the model until unrevert; the next prompt deletes them', async () => {
  h = await createHarness()
  const s = await h.engine.createSession()
  h.server.text('one').text('two')
  await h.engine.prompt(s.id, 'first').done
  await h.engine.prompt(s.id, 'second').done
  const all = await h.engine.messages(s.id)
  expect(all).toHaveLength(4)
  const session = await h.engine.revert(s.id, all[1].info.id)
  expect(session.revertedTo).toBe(all[1].info.id)
  expect((await h.engine.messages(s.id)).map((m) => m.info.id)).toEqual([all[0].info.id, all[1].info.id])
  await h.engine.unrevert(s.id)
  expect(await h.engine.messages(s.id)).toHaveLength(4)
  await h.engine.revert(s.id, all[1].info.id)
  await expect(h.engine.revert(s.id, all[3].info.id)).rejects.toBeInstanceOf(MessageNotFoundError) // hidden: not a revert target
  h.server.text('three')
  await h.engine.prompt(s.id, 'instead').done
  expect(userMessages(h.server.requests[2].body)).toEqual(['first', 'instead'])
  const after = await h.engine.messages(s.id)
  expect(after.map((m) => m.info.role)).toEqual(['user', 'assistant', 'user', 'assistant'])
  expect(after.map((m) => m.info.id)).not.toContain(all[2].info.id)
  expect((await h.engine.getSession(s.id))!.revertedTo).toBeUndefined()
  // the reverted turn's usage stays counted: it was paid for
  expect((await h.engine.usage(s.id)).turns).toHaveLength(3)
})

test('fork copies the history up to a message into a new session; the next request continues from it', async () => {
  h = await createHarness({ system: 'sys' })
  const s = await h.engine.createSession({ title: 'original', system: 'session system' })
  h.server.text('one').text('two')
  await h.engine.prompt(s.id, 'first').done
  await h.engine.prompt(s.id, 'second').done
  const source = await h.engine.messages(s.id)
  const copy = await h.engine.fork(s.id, source[1].info.id, { title: 'fork' })
  expect(copy).toMatchObject({ title: 'fork', defaults: { system: 'session system' } })
  const copied = await h.engine.messages(copy.id)
  expect(copied.map((m) => [m.info.role, m.parts.map((p) => ('text' in p ? p.text : p.type))])).toEqual(
    source.slice(0, 2).map((m) => [m.info.role, m.parts.map((p) => ('text' in p ? p.text : p.type))]),
  )
  expect(copied.every((m) => m.info.sessionId === copy.id && !source.some((o) => o.info.id === m.info.id))).toBe(true)
  h.server.text('forked')
  await h.engine.prompt(copy.id, 'other way').done
  expect(userMessages(h.server.requests[2].body)).toEqual(['first', 'other way'])
  expect(systemOf(h.server.requests[2].body)).toBe('session system')
  expect(await h.engine.messages(s.id)).toHaveLength(4) // the source is untouched
  await expect(h.engine.fork(s.id, 'msg_nope')).rejects.toBeInstanceOf(MessageNotFoundError)
})

test("a session's metadata is stored and returned by getSession and listSessions, copied by fork; what is not JSON is refused", async () => {
  h = await createHarness()
  const s = await h.engine.createSession({ id: 'chat-owned', title: 'mine', metadata: { owner: 'user_42', tags: ['a', 'b'], plan: { seats: 3 } } })
  expect(s).toMatchObject({ id: 'chat-owned', metadata: { owner: 'user_42', tags: ['a', 'b'], plan: { seats: 3 } } })
  expect(await h.engine.getSession('chat-owned')).toEqual(s)
  expect(await h.engine.listSessions()).toEqual([s])
  const plain = await h.engine.createSession()
  expect(plain).not.toHaveProperty('metadata')
  h.server.text('hello')
  await h.engine.prompt(s.id, 'hi').done
  const copy = await h.engine.fork(s.id, (await h.engine.messages(s.id))[1].info.id)
  expect(copy.metadata).toEqual({ owner: 'user_42', tags: ['a', 'b'], plan: { seats: 3 } })
  expect((await h.engine.getSession(copy.id))!.metadata).toEqual(s.metadata)
  for (const [metadata, argument] of [
    ['user_42', 'options.metadata'],
    [['user_42'], 'options.metadata'],
    [new Date(), 'options.metadata'],
    [{ owner: () => 'x' }, 'options.metadata.owner'],
    [{ nested: { n: Number.NaN } }, 'options.metadata.nested.n'],
    [{ list: [1, undefined] }, 'options.metadata.list[1]'],
  ] as const) {
    const error = await h.engine.createSession({ metadata: metadata as never }).catch((e: unknown) => e)
    expect(InvalidArgumentError.isInstance(error)).toBe(true)
    expect(error).toMatchObject({ argument })
  }
  expect(await h.engine.listSessions()).toHaveLength(3)
})

test('rename and delete; every history operation is refused with SessionBusyError while a turn runs', async () => {
  h = await createHarness()
  const s = await h.engine.createSession({ title: 'old' })
  h.server.text('one')
  await h.engine.prompt(s.id, 'first').done
  const [message] = await h.engine.messages(s.id)
  h.server.hang()
  const turn = h.engine.prompt(s.id, 'hang')
  await h.server.waitForCall(2)
  for (const op of [
    () => h.engine.updateSession(s.id, { title: 'x' }),
    () => h.engine.deleteSession(s.id),
    () => h.engine.revert(s.id, message.info.id),
    () => h.engine.unrevert(s.id),
    () => h.engine.fork(s.id, message.info.id),
  ]) {
    const error = await op().catch((e: unknown) => e)
    expect(SessionBusyError.isInstance(error)).toBe(true)
    expect(error).toMatchObject({ sessionId: s.id, turnId: turn.id })
  }
  turn.abort()
  await turn.done
  expect(await h.engine.updateSession(s.id, { title: 'new' })).toMatchObject({ id: s.id, title: 'new' })
  await h.engine.deleteSession(s.id)
  expect(await h.engine.getSession(s.id)).toBeUndefined()
  expect(await h.engine.getTurn(turn.id)).toBeUndefined()
  expect(await h.engine.listSessions()).toEqual([])
  await expect(h.engine.deleteSession(s.id)).rejects.toBeInstanceOf(SessionNotFoundError)
})
