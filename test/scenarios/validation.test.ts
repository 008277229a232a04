/**
 * Every public method and option checks its arguments (issue 14): a wrong value fails with
 * `InvalidArgumentError` / `InvalidOptionError` naming it, never a raw TypeError or a driver
 * error, and the engine keeps serving. Runs on SQLite and PostgreSQL.
 */
import { configureTool, createEngine, InvalidArgumentError, InvalidOptionError } from '../../src'
import { tool } from 'ai'
import { z } from 'zod'
import { createHarness, type Harness } from '../support/harness'

let h: Harness
afterEach(async () => {
  await h?.close()
})

const model = { specificationVersion: 'v3', provider: 'test', modelId: 'test', doStream: async () => ({}) } as never
const tooLong = 2 ** 31

describe('timers are bounded to what setTimeout can hold (2^31-1 ms)', () => {
  test.each([
    ['toolExecution.timeoutMs', { toolExecution: { timeoutMs: tooLong } }],
    ['streamIdleTimeoutMs', { streamIdleTimeoutMs: tooLong }],
    ['leaseMs', { leaseMs: 2 ** 32 }],
    ['recovery.intervalMs', { recovery: { intervalMs: tooLong } }],
    ['flushIntervalMs', { flushIntervalMs: tooLong }],
    ['busyTimeoutMs', { busyTimeoutMs: tooLong }],
    ['retry.initialDelayMs', { retry: { initialDelayMs: tooLong } }],
    ['retry.maxDelayMs', { retry: { maxDelayMs: tooLong } }],
    ['retry.maxHeaderDelayMs', { retry: { maxHeaderDelayMs: tooLong } }],
  ])('%s', async (option, options) => {
    const error = await createEngine({ model, ...options } as never).catch((e: unknown) => e)
    expect(error).toMatchObject({ name: 'InvalidOptionError', option })
    expect((error as Error).message).toContain('2147483647')
  })

  test('the largest delay a timer holds is accepted', async () => {
    const engine = await createEngine({ model, leaseMs: 2 ** 31 - 1, toolExecution: { timeoutMs: 2 ** 31 - 1 }, streamIdleTimeoutMs: 2 ** 31 - 1, recovery: { onOpen: false } })
    expect(engine.config.leaseMs).toBe(2 ** 31 - 1)
    await engine.close()
  })

  test("a tool's own timeout (configureTool) too", () => {
    const t = tool({ description: 'x', inputSchema: z.object({}), execute: async () => 'ok' })
    expect(() => configureTool(t, { timeoutMs: tooLong })).toThrow(InvalidArgumentError)
    expect(() => configureTool(t, { timeoutMs: 2 ** 31 - 1 })).not.toThrow()
  })
})

test.each([
  ['clock', { clock: 5 }],
  ['redact.secrets', { redact: { secrets: 'sk-not-an-array' } }],
  ['redact.secrets[0]', { redact: { secrets: ['abc'] } }],
  ['redact.other', { redact: { other: 1 } }],
])('option %s is checked', async (option, options) => {
  const error = await createEngine({ model, ...options } as never).catch((e: unknown) => e)
  expect(error).toMatchObject({ name: 'InvalidOptionError', option })
})

test('a refused secret is never shown in the error', async () => {
  const error = await createEngine({ model, redact: { secrets: ['sk-a', 42] } } as never).catch((e: unknown) => e)
  expect(JSON.stringify(error) + (error as Error).message).not.toContain('sk-a')
})

describe('createSession', () => {
  test.each([
    ['options', null],
    ['options', 'title'],
    ['options.title', { title: 5 }],
    ['options.title', { title: {} }],
    ['options.title', { title: 'a\u0000b' }],
    ['options.title', { title: 'lone \uD800 surrogate' }],
    ['options.title', { title: 'reversed \uDC00\uD800 pair' }],
    ['options.titel', { titel: 'typo' }],
  ])('%s = %p is refused, nothing stored', async (argument, options) => {
    h = await createHarness()
    const error = await h.engine.createSession(options as never).catch((e: unknown) => e)
    expect(InvalidArgumentError.isInstance(error)).toBe(true)
    expect(error).toMatchObject({ argument })
    expect(await h.engine.listSessions()).toEqual([])
  })

  test('titles that a text column can hold are stored exactly, on both dialects', async () => {
    h = await createHarness()
    const titles = ['plain', '', 'émoji 👩‍💻 \u{1F600}', "quotes ' \" ` \\", 'ctrl \u0001\u001f\r\n\u2028', 'bidi \u202Eabc', 'BOM \uFEFF']
    for (const title of titles) {
      const session = await h.engine.createSession({ title })
      expect((await h.engine.getSession(session.id))?.title).toBe(title)
    }
    expect((await h.engine.createSession({ title: null } as never)).title).toBeNull()
    expect((await h.engine.createSession()).title).toBeNull()
  })
})

describe('the other methods', () => {
  beforeEach(async () => {
    h = await createHarness()
  })

  test('subscribe(null) is refused; the next turn completes and the session goes idle', async () => {
    expect(() => h.engine.subscribe(null as never)).toThrow(InvalidArgumentError)
    expect(() => h.engine.subscribe('listener' as never)).toThrow(/invalid argument listener/)
    h.server.text('ok')
    const session = await h.engine.createSession()
    expect((await h.engine.prompt(session.id, 'hi').done).outcome).toBe('completed')
    expect(h.engine.status(session.id)).toEqual({ type: 'idle' })
  })

  test.each([
    ['prompt', 'sessionId', (e: Harness['engine']) => e.prompt(null as never, 'hi')],
    ['prompt', 'sessionId', (e: Harness['engine']) => e.prompt('ses_\u0000', 'hi')],
    ['status', 'sessionId', (e: Harness['engine']) => e.status(undefined as never)],
    ['activeTurn', 'sessionId', (e: Harness['engine']) => e.activeTurn(7 as never)],
  ])('%s: %s checked synchronously', (_method, argument, call) => {
    let error: unknown
    try {
      call(h.engine)
    } catch (e) {
      error = e
    }
    expect(error).toMatchObject({ name: 'InvalidArgumentError', argument })
  })

  test.each([
    ['getSession', 'sessionId', (e: Harness['engine']) => e.getSession(null as never)],
    ['getSession (NUL)', 'sessionId', (e: Harness['engine']) => e.getSession('ses_\u0000x')],
    ['messages', 'sessionId', (e: Harness['engine']) => e.messages({} as never)],
    ['abort', 'sessionId', (e: Harness['engine']) => e.abort(null as never)],
    ['transitions', 'turnId', (e: Harness['engine']) => e.transitions(undefined as never)],
    ['getTurn', 'turnId', (e: Harness['engine']) => e.getTurn('trn_\u0000')],
    ['replay', 'turnId', (e: Harness['engine']) => e.replay(5 as never)],
    ['approve', 'turnId', (e: Harness['engine']) => e.approve(null as never, 'call_1')],
    ['approve', 'callId', (e: Harness['engine']) => e.approve('trn_1', {} as never)],
    ['deny', 'callId', (e: Harness['engine']) => e.deny('trn_1', undefined as never)],
    ['deny', 'reason', (e: Harness['engine']) => e.deny('trn_1', 'call_1', 42 as never)],
    ['prune', 'options', (e: Harness['engine']) => e.prune(null as never)],
    ['prune', 'olderThan', (e: Harness['engine']) => e.prune({ olderThan: 'yesterday' } as never)],
  ])('%s: %s rejects with InvalidArgumentError', async (_method, argument, call) => {
    await expect(call(h.engine)).rejects.toMatchObject({ name: 'InvalidArgumentError', argument })
  })

  test("prompt's unknown option lists every option prompt takes, whenBusy included", async () => {
    const session = await h.engine.createSession()
    const error = (() => {
      try {
        h.engine.prompt(session.id, 'hi', { whenbusy: 'enqueue' } as never)
      } catch (e) {
        return e as Error
      }
    })()
    expect(error).toMatchObject({ name: 'InvalidArgumentError', argument: 'options.whenbusy' })
    const listed = /expected one of (.*) \(unknown option\)/.exec(error!.message)![1].split(', ')
    expect(listed).toEqual(expect.arrayContaining(['model', 'system', 'tools', 'temperature', 'maxSteps', 'headers', 'whenBusy', 'abortSignal']))
  })

  test.each([
    ['maxRetries', 3, 'retry options (createEngine({ retry: { maxAttempts } }))'],
    ['activeTools', ['lookup'], "the prompt's tools option"],
    ['prepareStep', () => ({}), "the step gate's rules (the engine option stepRules"],
    ['onFinish', () => {}, 'await turn.done'],
    ['experimental_output', {}, 'its successor is the prompt option output (Output.object({ schema }) from ai)'],
  ])("the AI SDK's %s is refused naming turnchart's equivalent", async (option, value, equivalent) => {
    const session = await h.engine.createSession()
    const error = (() => {
      try {
        h.engine.prompt(session.id, 'hi', { [option]: value } as never)
      } catch (e) {
        return e as Error
      }
    })()
    expect(error).toMatchObject({ name: 'InvalidArgumentError', argument: `options.${option}` })
    expect(error!.message).toContain(`expected no ${option}: `)
    expect(error!.message).toContain(equivalent)
  })

  test('the error names the value it got', async () => {
    const error = await h.engine.createSession({ title: 5 } as never).catch((e: unknown) => e)
    expect((error as Error).message).toBe('invalid argument options.title: expected a string or null, got 5')
    expect(InvalidOptionError.isInstance(error)).toBe(false)
  })
})
