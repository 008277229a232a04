/**
 * Trajectories (`trajectoryOf`, `readTrajectory`) and their diff (`diffTrajectories`,
 * `formatTrajectoryDiff`): a stored turn read as its steps, and two runs of it compared, on a
 * real engine over the scripted server.
 */
import { tool } from 'ai'
import { z } from 'zod'
import { diffTrajectories, formatTrajectoryDiff, readTrajectory, rerunTurn, trajectoryOf, type Trajectory } from '../../src/testing'
import { createHarness, type Harness } from '../support/harness'

let h: Harness
afterEach(async () => {
  await h?.close()
})

const add = tool({ description: 'Add two numbers', inputSchema: z.object({ a: z.number(), b: z.number() }), execute: async ({ a, b }) => ({ sum: a + b }) })

async function storedToolTurn(): Promise<string> {
  h = await createHarness({ tools: { add }, retry: { maxAttempts: 3, initialDelayMs: 1, maxDelayMs: 5, jitter: 0 } })
  h.server.tool('add', { a: 1, b: 2 }, { id: 'call_1', text: 'Adding.', usage: { input: 10, output: 4 } })
  h.server.error(503, { error: { message: 'Service Unavailable', type: 'server_error' } })
  h.server.text('1 + 2 = 3.', { usage: { input: 20, output: 6 } })
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'Add 1 and 2.')
  expect((await turn.done).outcome).toBe('completed')
  return turn.id
}

test('a stored turn reads as its steps: text, reasoning, tool calls with their results, usage, the last attempt of a retried step', async () => {
  h = await createHarness({ tools: { add }, retry: { maxAttempts: 3, initialDelayMs: 1, maxDelayMs: 5, jitter: 0 } })
  h.server.push({ type: 'stream', chunks: [{ reasoning: 'I should add.' }, { tool: { name: 'add', input: { a: 1, b: 2 }, id: 'call_1' } }], usage: { input: 10, output: 4 } })
  h.server.error(503, { error: { message: 'Service Unavailable', type: 'server_error' } })
  h.server.text('1 + 2 = 3.', { usage: { input: 20, output: 6 } })
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'Add 1 and 2.')
  expect((await turn.done).outcome).toBe('completed')

  const trajectory = await readTrajectory(h.engine, turn.id)
  expect(trajectory).toMatchObject({
    turnId: turn.id,
    sessionId: session.id,
    outcome: 'completed',
    error: null,
    usage: { inputTokens: 30, outputTokens: 10 },
    finalText: '1 + 2 = 3.',
  })
  expect(trajectory.states).toEqual((await h.engine.transitions(turn.id)).map((t) => t.to))
  expect(trajectory.steps).toEqual([
    {
      index: 1,
      text: '',
      reasoning: 'I should add.',
      toolCalls: [{ toolName: 'add', input: { a: 1, b: 2 }, output: { sum: 3 }, status: 'completed', callId: 'call_1' }],
      usage: { inputTokens: 10, outputTokens: 4 },
      finish: 'tool-calls',
      attempts: 1,
    },
    { index: 2, text: '1 + 2 = 3.', reasoning: '', toolCalls: [], usage: { inputTokens: 20, outputTokens: 6 }, finish: 'stop', attempts: 2 },
  ])
})

test('a re-run of an unchanged turn has the same trajectory; with another tool its diff names the tool result first', async () => {
  const turnId = await storedToolTurn()
  const stored = await readTrajectory(h.engine, turnId)
  const same = await rerunTurn(h.engine, turnId)
  const unchanged = diffTrajectories(stored, trajectoryOf(same.rerun))
  expect(unchanged).toMatchObject({ same: true, first: null, differences: [] })
  expect(unchanged.steps.map((s) => s.same)).toEqual([true, true])

  const broken = tool({ description: 'Add two numbers', inputSchema: z.object({ a: z.number(), b: z.number() }), execute: async ({ a, b }) => ({ sum: a + b + 1 }) })
  const rerun = await rerunTurn(h.engine, turnId, { tools: { add: broken } })
  const diff = diffTrajectories(stored, trajectoryOf(rerun.rerun))
  expect(diff.same).toBe(false)
  expect(diff.first).toEqual({ step: 1, field: 'toolOutput', call: 0, toolName: 'add', a: { status: 'completed', output: { sum: 3 } }, b: { status: 'completed', output: { sum: 4 } } })
  expect(diff.steps.map((s) => s.same)).toEqual([false, false])

  const text = formatTrajectoryDiff(diff)
  const marked = text.split('\n').filter((line) => line.startsWith('>'))
  expect(marked).toEqual([expect.stringMatching(/^> {3}add\(\{"a":1,"b":2\}\) → \{"sum":3\} +│ {3}add\(\{"a":1,"b":2\}\) → \{"sum":4\}$/)])
  // The chart paths from where they part: the second step's streaming.
  expect(formatTrajectoryDiff(diff, { width: 70 })).toMatch(/\n\* states: … streaming → retry-waiting → streaming → completed +│ states: … streaming → failed\n/)
  expect(text).toContain('first difference: step 1: the result of add (call 1)')
  expect(formatTrajectoryDiff(unchanged)).toContain('no difference: 2 steps')
  expect(formatTrajectoryDiff(diff, { color: true })).toContain('\u001b[33m> ')
})

function trajectory(overrides: Partial<Trajectory> = {}): Trajectory {
  return {
    turnId: 'tc_a',
    sessionId: 'ses_a',
    outcome: 'completed',
    error: null,
    states: ['step-gate', 'streaming', 'tool-running', 'streaming', 'completed'],
    steps: [
      { index: 1, text: '', reasoning: '', toolCalls: [{ toolName: 'search', input: { q: 'x' }, output: ['r'], status: 'completed', callId: 'c1' }], usage: { inputTokens: 5, outputTokens: 2 }, finish: 'tool-calls', attempts: 1 },
      { index: 2, text: 'Found r.', reasoning: '', toolCalls: [], usage: { inputTokens: 9, outputTokens: 3 }, finish: 'stop', attempts: 1 },
    ],
    usage: { inputTokens: 14, outputTokens: 5 },
    finalText: 'Found r.',
    ...overrides,
  }
}

test('the diff names each kind of difference: other tools, a tool input, a missing step, the outcome, the chart path; ignored fields are not compared', () => {
  const a = trajectory()
  const otherTool = trajectory({ steps: [{ ...a.steps[0], toolCalls: [{ ...a.steps[0].toolCalls[0], toolName: 'fetch' }] }, a.steps[1]] })
  expect(diffTrajectories(a, otherTool).differences).toEqual([{ step: 1, field: 'toolCalls', a: ['search'], b: ['fetch'] }])

  const otherInput = trajectory({ steps: [{ ...a.steps[0], toolCalls: [{ ...a.steps[0].toolCalls[0], input: { q: 'y' }, callId: 'other' }] }, a.steps[1]] })
  expect(diffTrajectories(a, otherInput).first).toEqual({ step: 1, field: 'toolInput', call: 0, toolName: 'search', a: { q: 'x' }, b: { q: 'y' } })

  const shorter = trajectory({ steps: [a.steps[0]], outcome: 'failed', error: { name: 'RetriesExhaustedError', message: 'gave up' }, states: ['step-gate', 'streaming', 'failed'] })
  const diff = diffTrajectories(a, shorter)
  expect(diff.differences.map((d) => [d.step, d.field])).toEqual([
    [2, 'steps'],
    [0, 'outcome'],
    [0, 'states'],
  ])
  expect(diff.differences[1]).toMatchObject({ a: 'completed', b: 'failed (RetriesExhaustedError: gave up)' })
  expect(diff.steps.map((s) => [s.index, s.same, s.b === null])).toEqual([
    [1, true, false],
    [2, false, true],
  ])
  expect(formatTrajectoryDiff(diff)).toContain('first difference: step 2 is only in a')

  const otherUsage = trajectory({ steps: [a.steps[0], { ...a.steps[1], usage: { inputTokens: 1, outputTokens: 1 } }] })
  expect(diffTrajectories(a, otherUsage).first).toMatchObject({ step: 2, field: 'usage' })
  expect(diffTrajectories(a, otherUsage, { ignore: ['usage'] }).same).toBe(true)
})
