/**
 * The chart on its own: pure transitions (what replay relies on), its graph loads in
 * @xstate/graph, and the diagram in docs/architecture.md matches the machine.
 */
import fs from 'node:fs'
import path from 'node:path'
import { createActor, initialTransition, transition } from 'xstate'
import { getAdjacencyMap } from '@xstate/graph'
import { turnMachine } from '../../machines/turn.machine'
import { chartEdges } from '../../src/chart/chart-edges'
import { currentChartBlock, renderChartBlock } from '../../src/chart/chart-docs'

const input = { turnId: 'trn_1', sessionId: 'ses_1', autoCompact: true, maxCompactions: 2 }

function replay(events: Array<{ type: string; [k: string]: unknown }>) {
  let [snapshot] = initialTransition(turnMachine, input)
  const states = [String(snapshot.value)]
  for (const event of events) {
    ;[snapshot] = transition(turnMachine, snapshot, event as never)
    states.push(String(snapshot.value))
  }
  return { states, snapshot }
}

test('a retried step, a tool step and a compaction, replayed with the pure transition function', () => {
  const { states, snapshot } = replay([
    { type: 'turn.start' },
    { type: 'step.failed', error: { name: 'APIError', message: '503' }, overflow: false, retryDelayMs: 2000 },
    { type: 'xstate.after.retryDelay.turn.retry-waiting' },
    { type: 'step.finished', finishReason: 'tool-calls', toolCalls: 1, overflow: true },
    { type: 'xstate.done.actor.runTools' },
    { type: 'xstate.done.actor.compact' },
    { type: 'step.finished', finishReason: 'stop', toolCalls: 0, overflow: false },
  ])
  expect(states).toEqual(['idle', 'streaming', 'retry-waiting', 'streaming', 'tool-running', 'compacting', 'streaming', 'completed'])
  expect(snapshot.context).toMatchObject({ step: 2, attempt: 1, compactions: 1, outcome: 'completed', error: null })
  expect(snapshot.output).toEqual({ outcome: 'completed', error: null })
})

test('the retry delay comes from the event and accumulates per step', () => {
  const { snapshot } = replay([
    { type: 'turn.start' },
    { type: 'step.failed', error: { name: 'APIError', message: 'x' }, overflow: false, retryDelayMs: 300 },
    { type: 'xstate.after.retryDelay.turn.retry-waiting' },
    { type: 'step.failed', error: { name: 'APIError', message: 'x' }, overflow: false, retryDelayMs: 700 },
  ])
  expect(snapshot.value).toBe('retry-waiting')
  expect(snapshot.context).toMatchObject({ attempt: 2, retryDelayMs: 700, waitedMs: 1000 })
})

test('abort from every non-final state reaches aborted; final states ignore it', () => {
  const prefixes: Record<string, Array<{ type: string; [k: string]: unknown }>> = {
    idle: [],
    streaming: [{ type: 'turn.start' }],
    'retry-waiting': [{ type: 'turn.start' }, { type: 'step.failed', error: { name: 'E', message: 'm' }, overflow: false, retryDelayMs: 1 }],
    'tool-running': [{ type: 'turn.start' }, { type: 'step.finished', finishReason: 'tool-calls', toolCalls: 1, overflow: false }],
    compacting: [{ type: 'turn.start' }, { type: 'step.failed', error: { name: 'E', message: 'm' }, overflow: true, retryDelayMs: null }],
  }
  for (const [state, events] of Object.entries(prefixes)) {
    const { states } = replay([...events, { type: 'turn.abort' }])
    expect(states.at(-2)).toBe(state)
    expect(states.at(-1)).toBe('aborted')
  }
  const done = replay([{ type: 'turn.start' }, { type: 'step.finished', finishReason: 'stop', toolCalls: 0, overflow: false }])
  expect(done.snapshot.status).toBe('done')
  const actor = createActor(turnMachine, { input, snapshot: done.snapshot }).start()
  actor.send({ type: 'turn.abort' })
  expect(actor.getSnapshot().value).toBe('completed')
})

test('@xstate/graph loads the machine and reaches every state', () => {
  const map = getAdjacencyMap(turnMachine, {
    input,
    events: [
      { type: 'turn.start' },
      { type: 'turn.abort' },
      { type: 'step.finished', finishReason: 'stop', toolCalls: 0, overflow: false },
      { type: 'step.failed', error: { name: 'E', message: 'm' }, overflow: false, retryDelayMs: 5 },
    ],
    serializeState: (s: { value: unknown }) => JSON.stringify(s.value),
  } as never)
  const reached = new Set(Object.values(map).map((entry) => JSON.stringify((entry as { state: { value: unknown } }).state.value)))
  for (const state of ['idle', 'streaming', 'retry-waiting', 'completed', 'aborted']) expect(reached).toContain(JSON.stringify(state))
})

test('the chart has the states of the contract, and every edge has a source and a target', () => {
  expect(Object.keys(turnMachine.root.states).sort()).toEqual(
    ['aborted', 'awaiting-approval', 'compacting', 'completed', 'failed', 'idle', 'interrupted', 'retry-waiting', 'streaming', 'tool-running'].sort(),
  )
  const edges = chartEdges()
  expect(edges.length).toBeGreaterThan(20)
  expect(edges).toContainEqual({ source: 'retry-waiting', event: 'xstate.after.retryDelay.turn.retry-waiting', guard: null, target: 'streaming' })
})

test('docs/architecture.md shows the current chart (run npm run chart:docs after changing it)', () => {
  const doc = fs.readFileSync(path.resolve(__dirname, '../../docs/architecture.md'), 'utf8')
  expect(currentChartBlock(doc)).toBe(renderChartBlock())
})
