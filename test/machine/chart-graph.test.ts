/**
 * The chart as the viewer draws it (src/chart/chart-graph.ts), read from the machine: nested
 * boxes, every edge as written, and which drawn edge each logged transition took
 * (src/viewer/turn-path.ts), the chart itself deciding between edges alike but for their guard.
 */
import type { TurnInput } from '../../machines/turn.types'
import { diagramEdges } from '../../src/chart/chart-edges'
import { chartGraph, edgesTaken, type ChartGraphNode } from '../../src/chart/chart-graph'
import type { TransitionRecord } from '../../src/core/types'
import { turnPath } from '../../src/viewer/turn-path'

const input: TurnInput = { turnId: 'trn_1', sessionId: 'ses_1', autoCompact: true, maxCompactions: 2 }

/** Log rows `[from, event, to, payload]` numbered from 1, 10 ms apart. */
function log(...rows: Array<[string, string, string, Record<string, unknown>?]>): TransitionRecord[] {
  return rows.map(([from, event, to, payload], i) => ({ turnId: 'trn_1', seq: i + 1, from, event, to, payload: payload ?? {}, time: 1000 + 10 * i }))
}

const finished = (over: Record<string, unknown> = {}) => ({ finishReason: 'stop', toolCalls: 0, overflow: false, ...over })

test('the boxes nest as the chart does: running holds the step, the tools and the compaction; each compound state has its initial marker', () => {
  const { nodes } = chartGraph()
  const shape = (node: ChartGraphNode): unknown => (node.children.length ? { [node.id]: node.children.map(shape) } : node.id)
  expect(nodes.map(shape)).toEqual([
    'initial:root',
    'idle',
    {
      running: [
        'initial:running',
        'step-gate',
        { step: ['initial:step', 'streaming', 'retry-waiting', 'throttled'] },
        'awaiting-approval',
        'tool-running',
        { 'awaiting-calls': ['initial:awaiting-calls', 'call-in-doubt', 'awaiting-deferred', 'sleeping'] },
        { compaction: ['initial:compaction', 'compacting', 'compaction-retry-waiting'] },
      ],
    },
    'interrupted',
    'completed',
    'failed',
    'aborted',
  ])
})

test('every edge of the machine is drawn once, from the state that defines it, with its event and guard as its label', () => {
  const drawn = chartGraph().edges.filter((e) => e.kind === 'transition' || e.kind === 'history')
  const written = diagramEdges().map((e) => ({ source: e.source, event: e.event, guard: e.guard, target: e.target.replace(/\.history$/, '') }))
  expect(drawn.map((e) => ({ source: e.source, event: e.event, guard: e.guard, target: e.target }))).toEqual(written)
  const toolRunning = drawn.find((e) => e.source === 'streaming' && e.target === 'tool-running')!
  expect(toolRunning.label).toEqual(['step.finished', '[hasToolCalls]'])
  expect(drawn.find((e) => e.source === 'retry-waiting')!.label).toEqual(['retry timer'])
  expect(drawn.find((e) => e.kind === 'history')).toMatchObject({ source: 'interrupted', target: 'running', label: ['turn.recover', '(history)'] })
  // Ids are listed space-separated in the page's attributes.
  expect(chartGraph().edges.filter((e) => /\s/.test(e.id)).map((e) => e.id)).toEqual([])
  expect(drawn.find((e) => e.source === 'streaming' && e.guard === 'overflowed && mayCompact')!.id).toBe('streaming>step.finished[overflowed&&mayCompact]>compaction')
  // turn.abort, handled at the root, leaves each top-level state that is not final.
  expect(chartGraph().edges.filter((e) => e.kind === 'any-state').map((e) => `${e.source}>${e.target}`)).toEqual(['idle>aborted', 'running>aborted', 'interrupted>aborted'])
})

test('the chart decides between edges alike but for their guard: a step limit and a refused overflow are two edges into failed', () => {
  const stepLimit = turnPath({ ...input, maxSteps: 1 }, log(['idle', 'turn.start', 'step-gate'], ['step-gate', 'gate.continue', 'streaming'], ['streaming', 'step.finished', 'failed', finished({ toolCalls: 1, finishReason: 'tool-calls' })]))
  const refused = turnPath({ ...input, autoCompact: false }, log(['idle', 'turn.start', 'step-gate'], ['step-gate', 'gate.continue', 'streaming'], ['streaming', 'step.finished', 'failed', finished({ overflow: true })]))
  expect(stepLimit.mismatch).toBeUndefined()
  expect(stepLimit.steps.map((s) => s.edges)).toEqual([['idle>turn.start>running'], ['step-gate>gate.continue>step'], ['streaming>step.finished[stepMustStop]>failed']])
  expect(refused.steps[2].edges).toEqual(['streaming>step.finished[overflowed]>failed'])
  // Without the chart's choice (no replay), the first edge written is taken.
  expect(edgesTaken({ from: 'streaming', to: 'failed', event: 'step.finished' })).toEqual(['streaming>step.finished[stepMustStop]>failed'])
})

test('edges of parent states, into parent states and through history are found from the leaves the log names', () => {
  const path = turnPath(
    input,
    log(
      ['idle', 'turn.start', 'step-gate'],
      ['step-gate', 'gate.continue', 'streaming'],
      ['streaming', 'step.finished', 'tool-running', finished({ toolCalls: 1 })],
      ['tool-running', 'tools.finished', 'step-gate', { overflow: false }],
      ['step-gate', 'gate.continue', 'streaming'],
      ['streaming', 'step.failed', 'retry-waiting', { error: { name: 'APIError', message: '429' }, overflow: false, retryDelayMs: 10 }],
      ['retry-waiting', 'turn.crashed', 'interrupted'],
      ['interrupted', 'turn.recover', 'retry-waiting', { retryDelayMs: 5 }],
      ['retry-waiting', 'xstate.after.retryDelay.turn.running.step.retry-waiting', 'streaming'],
      ['streaming', 'turn.abort', 'aborted'],
    ),
  )
  expect(path.mismatch).toBeUndefined()
  expect(path.steps.map((s) => s.edges)).toEqual([
    ['idle>turn.start>running'],
    ['step-gate>gate.continue>step'],
    ['streaming>step.finished[hasToolCalls]>tool-running'],
    ['tool-running>tools.finished>step-gate'],
    ['step-gate>gate.continue>step'],
    ['streaming>step.failed[retryAllowed]>retry-waiting'],
    ['running>turn.crashed>interrupted'],
    ['interrupted>turn.recover>running.history'],
    ['retry-waiting>xstate.after.retryDelay.turn.running.step.retry-waiting>streaming'],
    ['running>turn.abort>aborted'],
  ])
})

test('the last approval decided takes the decision edge, then the eventless edge out; a stopped actor is drawn on the abort edge', () => {
  const path = turnPath(
    input,
    log(
      ['idle', 'turn.start', 'step-gate'],
      ['step-gate', 'gate.continue', 'streaming'],
      ['streaming', 'step.finished', 'awaiting-approval', finished({ toolCalls: 2, approvals: ['a', 'b'] })],
      ['awaiting-approval', 'tool.approved', 'awaiting-approval', { callId: 'a' }],
      ['awaiting-approval', 'tool.denied', 'tool-running', { callId: 'b' }],
      ['tool-running', 'xstate.stop', 'aborted'],
    ),
  )
  expect(path.mismatch).toBeUndefined()
  expect(path.steps.slice(3).map((s) => s.edges)).toEqual([
    ['awaiting-approval>tool.*[isPendingApproval]>awaiting-approval'],
    ['awaiting-approval>tool.*[isPendingApproval]>awaiting-approval', 'awaiting-approval>always[allApprovalsDecided]>tool-running'],
    ['running>turn.abort>aborted'],
  ])
})

test('a log the chart disagrees with is still drawn, row by row, and the mismatch is said', () => {
  const path = turnPath(input, log(['idle', 'turn.start', 'step-gate'], ['step-gate', 'gate.continue', 'streaming'], ['streaming', 'step.finished', 'completed', finished({ toolCalls: 1 })]))
  expect(path.mismatch).toMatch(/leads to 'tool-running', the row says 'completed'/)
  expect(path.steps[2].edges).toEqual(['streaming>step.finished>completed'])
  expect(turnPath(input, log(['idle', 'turn.start', 'nowhere'])).steps[0].edges).toEqual([])
})
