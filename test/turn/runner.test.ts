/**
 * The runner's guarantees, through a real engine (scripted HTTP server, SQLite file): an abort
 * during the write-ahead gate calls no provider; no hook or defect reaches the process as an
 * unhandled rejection; an empty model stream is retried.
 */
import { tool } from 'ai'
import { z } from 'zod'
import { turnStateName } from '../../src'
import { createHarness, type Harness } from '../support/harness'
import { unhandledRejectionsDuring } from '../support/unhandled-rejections'

let h: Harness | undefined
afterEach(async () => {
  await h?.close()
  h = undefined
})

test('an abort that arrives while the row entering streaming commits makes zero provider requests', async () => {
  h = await createHarness()
  h.server.text('never sent')
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'hi')
  // The chart enters streaming synchronously when the prompt is stored; its row is then only queued.
  const sub = turn.actor.subscribe((snapshot) => {
    if (turnStateName(snapshot) === 'streaming') {
      sub.unsubscribe()
      turn.abort('changed my mind')
    }
  })
  const result = await turn.done
  expect(result.outcome).toBe('aborted')
  expect(h.server.calls).toBe(0)
  expect((await h.engine.transitions(turn.id)).map((r) => `${r.from} --${r.event}--> ${r.to}`)).toEqual([
    'idle --turn.start--> step-gate',
    'step-gate --gate.continue--> streaming',
    'streaming --turn.abort--> aborted',
  ])
})

test('a tracer whose startSpan throws skips its spans: the turn runs its tools and completes, the error reaches onSubscriberError, nothing is unhandled', async () => {
  const reported: unknown[] = []
  const tracer = {
    startSpan: () => {
      throw new Error('tracer down')
    },
  }
  const echo = tool({ description: 'Echo', inputSchema: z.object({ text: z.string() }), execute: async ({ text }) => text })
  h = await createHarness({ tools: { echo }, telemetry: { tracer }, onSubscriberError: (error) => void reported.push(error) })
  h.server.tool('echo', { text: 'hello' })
  h.server.text('done')
  const session = await h.engine.createSession()
  let outcome = ''
  const unhandled = await unhandledRejectionsDuring(async () => {
    outcome = (await h!.engine.prompt(session.id, 'echo hello').done).outcome
  })
  expect(unhandled).toEqual([])
  expect(outcome).toBe('completed')
  const tool0 = (await h.engine.messages(session.id)).flatMap((m) => m.parts).find((p) => p.type === 'tool')
  expect(tool0).toMatchObject({ state: { status: 'completed', output: 'hello' } })
  expect(reported.length).toBeGreaterThan(0)
  expect(String(reported[0])).toContain('tracer down')
})

test('a span whose methods throw costs its attributes only: the turn completes', async () => {
  const throwing = () => {
    throw new Error('span broken')
  }
  const tracer = { startSpan: () => ({ setAttribute: throwing, setStatus: throwing, recordException: throwing, end: throwing }) }
  h = await createHarness({ telemetry: { tracer }, onSubscriberError: () => undefined })
  h.server.text('fine')
  const session = await h.engine.createSession()
  const unhandled = await unhandledRejectionsDuring(async () => {
    expect((await h!.engine.prompt(session.id, 'hi').done).outcome).toBe('completed')
  })
  expect(unhandled).toEqual([])
})

test('an inspector that throws is reported, never the turn\'s failure', async () => {
  const reported: unknown[] = []
  h = await createHarness({
    inspect: () => {
      throw new Error('inspector down')
    },
    onSubscriberError: (error) => void reported.push(error),
  })
  h.server.text('fine')
  const session = await h.engine.createSession()
  expect((await h.engine.prompt(session.id, 'hi').done).outcome).toBe('completed')
  expect(String(reported[0])).toContain('inspector down')
})

test('an empty model stream (no output, no finish) is retried: the next attempt answers', async () => {
  h = await createHarness()
  h.server.push({ type: 'raw', headers: { 'content-type': 'text/event-stream' }, body: 'data: [DONE]\n\n' })
  h.server.text('second time lucky')
  const session = await h.engine.createSession()
  const result = await h.engine.prompt(session.id, 'hi').done
  expect(result).toMatchObject({ outcome: 'completed', text: 'second time lucky' })
  expect(h.server.calls).toBe(2)
  const rows = await h.engine.transitions(result.turnId)
  expect(rows.map((r) => r.to)).toEqual(['step-gate', 'streaming', 'retry-waiting', 'streaming', 'completed'])
  // (this provider reports the empty stream itself; one that ends it quietly gives EmptyModelStreamError,
  // retried the same way: test/llm/stream-step.test.ts)
  expect(rows[2].payload).toMatchObject({ retryDelayMs: expect.any(Number), error: { isRetryable: true, message: expect.stringMatching(/ended without a finish/) } })
})

test('a defect of the tool runner (a tool whose options cannot be read) fails the turn through turn.fail, its calls closed, nothing unhandled', async () => {
  // An Error whose message getter throws, from a getter turnchart reads before running the call:
  // whatever `execute` throws is the tool's result, so only this reaches the runner itself.
  const hostile = new Error()
  Object.defineProperty(hostile, 'message', {
    get() {
      throw new Error('the message getter threw')
    },
  })
  const work = tool({ description: 'Work', inputSchema: z.object({ n: z.number() }), execute: async ({ n }) => n })
  const broken = new Proxy(work, {
    get(target, key, receiver) {
      if (key === Symbol.for('turnchart.toolOptions')) throw hostile
      return Reflect.get(target, key, receiver)
    },
  })
  h = await createHarness({ tools: { work: broken } })
  h.server.tool('work', { n: 1 })
  const session = await h.engine.createSession()
  let result: Awaited<ReturnType<typeof h.engine.prompt>['done']> | undefined
  const unhandled = await unhandledRejectionsDuring(async () => {
    result = await h!.engine.prompt(session.id, 'work').done
  })
  expect(unhandled).toEqual([])
  expect(result).toMatchObject({ outcome: 'failed', error: { name: 'UnknownError', message: expect.stringContaining('running the tools failed') } })
  const rows = await h.engine.transitions(result!.turnId)
  expect(rows.map((r) => `${r.from} --${r.event}--> ${r.to}`).at(-1)).toBe('tool-running --turn.fail--> failed')
  const part = (await h.engine.messages(session.id)).flatMap((m) => m.parts).find((p) => p.type === 'tool')
  expect(part).toMatchObject({ state: { status: 'error', metadata: { interrupted: true } } })
})

