/**
 * The public API's edges: option validation naming the option, one turn per session,
 * unknown sessions, closed engines, bad prompts, abort twice, close while running.
 */
import { createEngine, EngineClosedError, InvalidArgumentError, InvalidOptionError, SessionBusyError, SessionNotFoundError } from '../../src'
import { createHarness, modelFor, type Harness } from '../support/harness'

let h: Harness
afterEach(async () => {
  await h?.close()
})

describe('createEngine validates options and names the one that is wrong', () => {
  const model = { doStream: async () => ({}) } as never
  test.each([
    ['model', { model: undefined }],
    ['limits.context', { model, limits: { context: -1, output: 10 } }],
    ['limits.output', { model, limits: { context: 10, output: 1.5 } }],
    ['database', { model, database: '/no/such/folder/agent.db' }],
    ['retry.maxAttempts', { model, retry: { maxAttempts: 0 } }],
    ['compaction.auto', { model, compaction: { auto: 'yes' } }],
    ['tools.bash.execute', { model, tools: { bash: { description: 'x', inputSchema: {} } } }],
    ['toolExecution.concurrency', { model, toolExecution: { concurrency: 0 } }],
    ['streamIdleTimeoutMs', { model, streamIdleTimeoutMs: -5 }],
    ['databse', { model, databse: ':memory:' }],
  ])('%s', async (option, options) => {
    const error = await createEngine(options as never).catch((e: unknown) => e)
    expect(InvalidOptionError.isInstance(error)).toBe(true)
    expect(error).toMatchObject({ name: 'InvalidOptionError', option })
    expect((error as Error).message).toContain(option)
  })
})

test('a second prompt on a busy session fails with SessionBusyError; the first is unaffected', async () => {
  h = await createHarness()
  h.server.hang()
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'first')
  let error: unknown
  try {
    h.engine.prompt(session.id, 'second')
  } catch (e) {
    error = e
  }
  expect(SessionBusyError.isInstance(error)).toBe(true)
  expect(error).toMatchObject({ sessionId: session.id, turnId: turn.id })
  await h.server.waitForCall(1)
  turn.abort()
  await turn.done
  h.server.text('ok')
  expect((await h.engine.prompt(session.id, 'third').done).outcome).toBe('completed')
})

test('an unknown session makes turn.done reject with SessionNotFoundError and stores nothing', async () => {
  h = await createHarness()
  const turn = h.engine.prompt('ses_does_not_exist', 'hi')
  await expect(turn.done).rejects.toMatchObject({ name: 'SessionNotFoundError', sessionId: 'ses_does_not_exist' })
  expect(await h.engine.getTurn(turn.id)).toBeUndefined()
  expect(h.server.calls).toBe(0)
  await expect(h.engine.messages('ses_does_not_exist')).rejects.toBeInstanceOf(SessionNotFoundError)
})

test.each([[''], ['   '], [42], [undefined]])('prompt with %p fails with InvalidArgumentError', async (text) => {
  h = await createHarness()
  const session = await h.engine.createSession()
  expect(() => h.engine.prompt(session.id, text as never)).toThrow(InvalidArgumentError)
})

test('calls on a closed engine fail with EngineClosedError', async () => {
  h = await createHarness()
  const session = await h.engine.createSession()
  await h.engine.close()
  expect(() => h.engine.prompt(session.id, 'hi')).toThrow(EngineClosedError)
  await expect(h.engine.createSession()).rejects.toBeInstanceOf(EngineClosedError)
})

test('abort twice, abort on an idle or unknown session: no error, no effect', async () => {
  h = await createHarness()
  h.server.hang()
  const session = await h.engine.createSession()
  await h.engine.abort(session.id)
  await h.engine.abort('ses_unknown')
  const turn = h.engine.prompt(session.id, 'x')
  await h.server.waitForCall(1)
  turn.abort()
  turn.abort()
  await h.engine.abort(session.id)
  expect((await turn.done).outcome).toBe('aborted')
  expect((await h.engine.transitions(turn.id)).filter((t) => t.to === 'aborted')).toHaveLength(1)
})

test('close() while a turn runs leaves it resumable: its streamed text stored, released, resumed by the next engine', async () => {
  h = await createHarness()
  h.server.push({ type: 'stream', chunks: [{ text: 'partial' }], end: 'hang' })
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'x')
  await h.waitForEvent((e) => e.type === 'part.delta')
  await h.engine.close()
  await expect(turn.done).rejects.toMatchObject({ name: 'EngineClosedError' })
  h.server.text('resumed')
  const reopened = await createEngine({ database: h.dbPath, model: modelFor(h.server), recovery: { onOpen: false } })
  try {
    // Stored as it was when the engine closed: still streaming, owned by nobody, the text kept.
    expect(await reopened.getTurn(turn.id)).toMatchObject({ state: 'streaming', outcome: null, owner: null })
    const [, assistant] = await reopened.messages(session.id)
    expect(assistant.parts.find((p) => p.type === 'text')).toMatchObject({ text: 'partial' })
    const [resumed] = await reopened.recover()
    expect(resumed.id).toBe(turn.id)
    expect((await resumed.done).outcome).toBe('completed')
  } finally {
    await reopened.close()
  }
})

test('close({ abortTurns: true }) ends running turns aborted with their rows flushed', async () => {
  h = await createHarness()
  h.server.push({ type: 'stream', chunks: [{ text: 'partial' }], end: 'hang' })
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'x')
  await h.waitForEvent((e) => e.type === 'part.delta')
  await h.engine.close({ abortTurns: true })
  expect((await turn.done).outcome).toBe('aborted')
  const reopened = await createEngine({ database: h.dbPath, model: modelFor(h.server) })
  const [, assistant] = await reopened.messages(session.id)
  expect(assistant.info.error?.name).toBe('MessageAbortedError')
  expect(assistant.parts.find((p) => p.type === 'text')).toMatchObject({ text: 'partial', time: { end: expect.any(Number) } })
  await reopened.close()
})

test('a subscriber that throws does not stop the turn and is reported once', async () => {
  const reported: unknown[] = []
  h = await createHarness({ onSubscriberError: (e) => reported.push(e) })
  h.engine.subscribe(() => {
    throw new Error('bad subscriber')
  })
  h.server.text('fine')
  const session = await h.engine.createSession()
  expect((await h.engine.prompt(session.id, 'x').done).outcome).toBe('completed')
  expect(reported).toHaveLength(1)
})

test('status: busy while streaming, idle after', async () => {
  h = await createHarness()
  h.server.hang()
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'x')
  await h.waitForEvent((e) => e.type === 'session.status' && e.status.type === 'busy')
  expect(h.engine.status(session.id)).toMatchObject({ type: 'busy', turnId: turn.id, state: 'streaming' })
  turn.abort()
  await turn.done
  expect(h.engine.status(session.id)).toEqual({ type: 'idle' })
})

test('a multi-turn conversation sends the whole history in order', async () => {
  h = await createHarness()
  h.server.text('first answer')
  h.server.text('second answer')
  const session = await h.engine.createSession()
  await h.engine.prompt(session.id, 'first question').done
  await h.engine.prompt(session.id, 'second question').done
  expect(h.server.requests[1].body.messages).toEqual([
    { role: 'user', content: 'first question' },
    { role: 'assistant', content: 'first answer' },
    { role: 'user', content: 'second question' },
  ])
})
