/**
 * Every function an app hands to the engine, throwing and rejecting (issue 26): subscribers,
 * `onSubscriberError`, `inspect`, the telemetry tracer, `errorClassifier`, `retryPolicy`, a
 * tool's `needsApproval` and `execute`. Each failure has one documented outcome (docs/behaviour.md,
 * "Hooks that fail") and none reaches the process as an unhandled rejection: each test runs a
 * real turn (scripted HTTP server, SQLite file) under `unhandledRejectionsDuring`.
 */
import { tool } from 'ai'
import { z } from 'zod'
import { classifyError, HookError, NotificationListenerError, type EngineOptions, type TurnchartEvent, type TurnResult } from '../../src'
import { createHarness, assistantParts, type Harness } from '../support/harness'
import { unhandledRejectionsDuring } from '../support/unhandled-rejections'

let h: Harness | undefined
afterEach(async () => {
  await h?.close()
  h = undefined
})

const boom = (what: string) => new Error(`${what} broke`)

/** An engine whose `onSubscriberError` collects what it is told. */
async function engineWith(options: Partial<EngineOptions>, reported: unknown[] = []) {
  h = await createHarness({ onSubscriberError: (error) => void reported.push(error), ...options })
  return { h, reported }
}

/** Runs one prompt to its end and returns its result with the unhandled rejections seen meanwhile. */
async function runTurn(text = 'hi') {
  const session = await h!.engine.createSession()
  let result: TurnResult | undefined
  const unhandled = await unhandledRejectionsDuring(async () => {
    result = await h!.engine.prompt(session.id, text).done
  })
  return { result: result!, unhandled, sessionId: session.id }
}

describe('subscribers and their reporter', () => {
  test('a subscriber that throws is reported once to onSubscriberError; the turn and the other subscribers go on', async () => {
    const { reported } = await engineWith({})
    h!.engine.subscribe(() => {
      throw boom('subscriber')
    })
    h!.server.text('fine')
    const { result, unhandled } = await runTurn()
    expect(unhandled).toEqual([])
    expect(result.outcome).toBe('completed')
    expect(reported.map(String)).toEqual(['Error: subscriber broke'])
    expect(h!.events.some((e) => e.type === 'turn.transition' && e.to === 'completed')).toBe(true) // the harness's own subscriber
  })

  test('an async subscriber whose promise rejects is reported like a throw, never left unhandled', async () => {
    const { reported } = await engineWith({})
    h!.engine.subscribe(async (event: TurnchartEvent) => {
      if (event.type === 'part.delta') throw boom('async subscriber')
    })
    h!.server.text('fine')
    const { result, unhandled } = await runTurn()
    expect(unhandled).toEqual([])
    expect(result.outcome).toBe('completed')
    expect(reported.map(String)).toEqual(['Error: async subscriber broke'])
  })

  test('an onSubscriberError that throws, or rejects, is swallowed: the turn completes', async () => {
    for (const reporter of [
      () => {
        throw boom('reporter')
      },
      async () => {
        throw boom('async reporter')
      },
    ]) {
      h = await createHarness({ onSubscriberError: reporter })
      h.engine.subscribe(() => {
        throw boom('subscriber')
      })
      h.server.text('fine')
      const { result, unhandled } = await runTurn()
      expect(unhandled).toEqual([])
      expect(result.outcome).toBe('completed')
      await h.close()
      h = undefined
    }
  })
})

test("without onSubscriberError, the console says what happened: a subscriber's throw as one, a notifications outage as itself (nothing threw)", async () => {
  const said: unknown[][] = []
  const spy = jest.spyOn(console, 'error').mockImplementation((...args: unknown[]) => void said.push(args))
  try {
    h = await createHarness()
    h.engine.subscribe(() => {
      throw boom('subscriber')
    })
    h.server.text('fine')
    await runTurn()
    const { resolveObservability } = await import('../../src/config/observability')
    resolveObservability({}).onSubscriberError(new NotificationListenerError('postgres://db/app', 'connection refused'))
  } finally {
    spy.mockRestore()
  }
  expect(said.map(([words, error]) => `${String(words)} ${String(error)}`)).toEqual([
    'turnchart: a subscriber or a hook threw (nothing stopped): Error: subscriber broke',
    'turnchart: NotificationListenerError: the PostgreSQL notification listener on postgres://db/app failed (connection refused); polling until it reconnects',
  ])
})

describe('inspect', () => {
  test('an inspect function that throws, or an async one that rejects, is reported; the turn completes', async () => {
    for (const inspect of [
      () => {
        throw boom('inspector')
      },
      async () => {
        throw boom('async inspector')
      },
    ]) {
      const { reported } = await engineWith({ inspect })
      h!.server.text('fine')
      const { result, unhandled } = await runTurn()
      expect(unhandled).toEqual([])
      expect(result.outcome).toBe('completed')
      expect(String(reported[0])).toMatch(/inspector broke/)
      await h!.close()
      h = undefined
    }
  })

  test('an inspection observer whose next throws is reported; the turn completes', async () => {
    const { reported } = await engineWith({
      inspect: {
        next: () => {
          throw boom('observer')
        },
      },
    })
    h!.server.text('fine')
    const { result, unhandled } = await runTurn()
    expect(unhandled).toEqual([])
    expect(result.outcome).toBe('completed')
    expect(String(reported[0])).toMatch(/observer broke/)
  })
})

describe('telemetry', () => {
  test('a tracer whose startSpan throws, with a reporter that throws too, costs the spans only', async () => {
    const tracer = {
      startSpan: () => {
        throw boom('tracer')
      },
    }
    h = await createHarness({
      telemetry: { tracer },
      onSubscriberError: () => {
        throw boom('reporter')
      },
    })
    h.server.text('fine')
    const { result, unhandled } = await runTurn()
    expect(unhandled).toEqual([])
    expect(result).toMatchObject({ outcome: 'completed', text: 'fine' })
  })
})

describe('errorClassifier and retryPolicy', () => {
  test('an errorClassifier that throws fails the turn at once with HookError { hook: errorClassifier }', async () => {
    await engineWith({
      errorClassifier: () => {
        throw boom('classifier')
      },
    })
    h!.server.error(503, { error: { message: 'unavailable' } })
    h!.server.text('never reached')
    const { result, unhandled, sessionId } = await runTurn()
    expect(unhandled).toEqual([])
    expect(result.outcome).toBe('failed')
    expect(result.error).toMatchObject({ name: 'HookError', hook: 'errorClassifier', message: 'errorClassifier threw: classifier broke' })
    expect(HookError.isInstance(result.error)).toBe(true)
    expect(h!.server.calls).toBe(1)
    const [, assistant] = await h!.engine.messages(sessionId)
    expect(assistant.info.error).toMatchObject({ name: 'HookError', hook: 'errorClassifier' })
  })

  test('an errorClassifier that answers with a rejected promise fails the turn with HookError; the rejection is not left unhandled', async () => {
    await engineWith({ errorClassifier: (async () => Promise.reject(boom('async classifier'))) as never })
    h!.server.error(503, { error: { message: 'unavailable' } })
    const { result, unhandled } = await runTurn()
    expect(unhandled).toEqual([])
    expect(result.error).toMatchObject({ name: 'HookError', hook: 'errorClassifier', message: expect.stringMatching(/a promise \(it must answer synchronously\)/) })
  })

  test('an errorClassifier that throws on a compaction’s summary request fails the turn with CompactionFailedError { lastError: HookError }', async () => {
    let calls = 0
    await engineWith({
      errorClassifier: (error) => {
        if (calls++ === 0) return classifyError(error) // the step's overflow: compact
        throw boom('classifier')
      },
    })
    h!.server.error(400, { error: { code: 'context_length_exceeded', message: 'too long' } })
    h!.server.error(503, { error: { message: 'unavailable' } }) // the summary request
    const { result, unhandled } = await runTurn()
    expect(unhandled).toEqual([])
    expect(result.error).toMatchObject({ name: 'CompactionFailedError', lastError: { name: 'HookError', hook: 'errorClassifier' } })
    expect(h!.server.calls).toBe(2)
  })

  test('a retryPolicy that throws fails the turn at once with HookError { hook: retryPolicy }', async () => {
    await engineWith({
      retryPolicy: () => {
        throw boom('policy')
      },
    })
    h!.server.error(429, { error: { message: 'slow down' } })
    h!.server.text('never reached')
    const { result, unhandled } = await runTurn()
    expect(unhandled).toEqual([])
    expect(result.error).toMatchObject({ name: 'HookError', hook: 'retryPolicy', message: 'retryPolicy threw: policy broke' })
    expect(h!.server.calls).toBe(1)
  })

  test('a retryPolicy that answers with a rejected promise, or with nonsense, fails the turn with HookError', async () => {
    for (const retryPolicy of [async () => Promise.reject(boom('async policy')), () => ({ wait: 5 })]) {
      await engineWith({ retryPolicy: retryPolicy as never })
      h!.server.error(429, { error: { message: 'slow down' } })
      const { result, unhandled } = await runTurn()
      expect(unhandled).toEqual([])
      expect(result.error).toMatchObject({ name: 'HookError', hook: 'retryPolicy', message: expect.stringMatching(/^retryPolicy answered what it may not: /) })
      await h!.close()
      h = undefined
    }
  })
})

describe('tools', () => {
  const ran: string[] = []
  const guarded = (needsApproval: () => boolean | Promise<boolean>) =>
    tool({
      description: 'Deploy',
      inputSchema: z.object({ env: z.string() }),
      needsApproval,
      execute: async ({ env }) => {
        ran.push(env)
        return `deployed ${env}`
      },
    })

  test.each([
    [
      'throws',
      () => {
        throw boom('needsApproval')
      },
    ],
    ['rejects', async () => Promise.reject(boom('needsApproval'))],
  ])('a needsApproval that %s asks a human: the call waits for approval (never runs unasked), and the error is reported', async (_how, needsApproval) => {
    ran.length = 0
    const { reported } = await engineWith({ tools: { deploy: guarded(needsApproval) } })
    h!.server.tool('deploy', { env: 'prod' }, { id: 'call_1' })
    h!.server.text('Deployed.')
    const session = await h!.engine.createSession()
    const unhandled = await unhandledRejectionsDuring(async () => {
      const turn = h!.engine.prompt(session.id, 'ship it')
      await h!.waitForEvent((e) => e.type === 'approval.requested')
      expect(ran).toEqual([])
      await h!.engine.approve(turn.id, 'call_1')
      expect(await turn.done).toMatchObject({ outcome: 'completed' })
    })
    expect(unhandled).toEqual([])
    expect(ran).toEqual(['prod'])
    expect(reported).toEqual([expect.objectContaining({ name: 'HookError', hook: "tool 'deploy' needsApproval", message: "tool 'deploy' needsApproval threw: needsApproval broke" })])
  })

  test('an execute that throws or rejects becomes its tool error part; the model sees it and the turn completes', async () => {
    const sync = tool({
      description: 'a',
      inputSchema: z.object({}),
      execute: (): string => {
        throw boom('sync tool')
      },
    })
    const rejecting = tool({ description: 'b', inputSchema: z.object({}), execute: async (): Promise<string> => Promise.reject(boom('async tool')) })
    await engineWith({ tools: { sync, rejecting } })
    h!.server.push({ type: 'stream', chunks: [{ tool: { name: 'sync', input: {} } }, { tool: { name: 'rejecting', input: {} } }] })
    h!.server.text('both failed')
    const { result, unhandled, sessionId } = await runTurn()
    expect(unhandled).toEqual([])
    expect(result.outcome).toBe('completed')
    const tools = (await assistantParts(h!.engine, sessionId)).filter((p) => p.type === 'tool')
    expect(tools.map((p) => p.type === 'tool' && p.state)).toEqual([
      expect.objectContaining({ status: 'error', error: 'sync tool broke' }),
      expect.objectContaining({ status: 'error', error: 'async tool broke' }),
    ])
  })
})
