/**
 * The chart on its own: pure transitions (what replay relies on), its graph loads in
 * @xstate/graph, and the diagram in docs/architecture.md matches the machine.
 */
import fs from 'node:fs'
import path from 'node:path'
import { createActor, initialTransition, transition } from 'xstate'
import { getAdjacencyMap } from '@xstate/graph'
import { interruptibleStates, retryWaitStates, turnMachine, turnStateName, waitingStates, waitOf } from '../../machines/turn.machine'
import { chartEdges, diagramEdges, toMermaid } from '../../src/chart/chart-edges'
import { currentChartBlock, renderChartBlock } from '../../src/chart/chart-docs'

const input = { turnId: 'trn_1', sessionId: 'ses_1', autoCompact: true, maxCompactions: 2 }
/** The prompt stored, and the step gate's verdict before the first call. */
const started: Array<{ type: string; [k: string]: unknown }> = [{ type: 'turn.start' }, { type: 'gate.continue' }]

function replay(events: Array<{ type: string; [k: string]: unknown }>) {
  let [snapshot] = initialTransition(turnMachine, input)
  const states: string[] = [turnStateName(snapshot)]
  for (const event of events) {
    ;[snapshot] = transition(turnMachine, snapshot, event as never)
    states.push(turnStateName(snapshot))
  }
  return { states, snapshot }
}

test('a retried step, a tool step and a compaction, replayed with the pure transition function', () => {
  const { states, snapshot } = replay([
    ...started,
    { type: 'step.failed', error: { name: 'APIError', message: '503' }, overflow: false, retryDelayMs: 2000 },
    { type: 'xstate.after.retryDelay.turn.running.step.retry-waiting' },
    { type: 'step.finished', finishReason: 'tool-calls', toolCalls: 1, overflow: true },
    { type: 'tools.finished', overflow: true },
    { type: 'compaction.finished', completes: false },
    { type: 'gate.continue' },
    { type: 'step.finished', finishReason: 'stop', toolCalls: 0, overflow: false },
  ])
  expect(states).toEqual(['idle', 'step-gate', 'streaming', 'retry-waiting', 'streaming', 'tool-running', 'compacting', 'step-gate', 'streaming', 'completed'])
  expect(snapshot.context).toMatchObject({ step: 2, attempt: 1, compactions: 1, outcome: 'completed', error: null })
  expect(snapshot.output).toEqual({ outcome: 'completed', error: null })
})

test("a step over its model's rate limit waits in throttled until its time, then the same attempt asks again", () => {
  const { states, snapshot } = replay([
    ...started,
    { type: 'step.throttled', model: 'primary', until: 61_200 },
    { type: 'throttle.lifted' },
    { type: 'step.throttled', model: 'primary', until: 62_000 },
  ])
  expect(states).toEqual(['idle', 'step-gate', 'streaming', 'throttled', 'streaming', 'throttled'])
  // (the deadline the row stores and the sweep reads; not a retry: no attempt is spent, no delay waited)
  expect(snapshot.context).toMatchObject({ step: 1, attempt: 1, waitedMs: 0, throttledUntil: 62_000 })
  const lifted = replay([...started, { type: 'step.throttled', model: 'primary', until: 61_200 }, { type: 'throttle.lifted' }]).snapshot
  expect(lifted.context.throttledUntil).toBeNull()
  expect(replay([...started, { type: 'step.throttled', model: 'primary', until: 61_200 }, { type: 'turn.abort' }]).states.at(-1)).toBe('aborted')
})

test('the retry delay comes from the event and accumulates per step', () => {
  const { snapshot } = replay([
    ...started,
    { type: 'step.failed', error: { name: 'APIError', message: 'x' }, overflow: false, retryDelayMs: 300 },
    { type: 'xstate.after.retryDelay.turn.running.step.retry-waiting' },
    { type: 'step.failed', error: { name: 'APIError', message: 'x' }, overflow: false, retryDelayMs: 700 },
  ])
  expect(turnStateName(snapshot)).toBe('retry-waiting')
  expect(snapshot.context).toMatchObject({ attempt: 2, retryDelayMs: 700, waitedMs: 1000 })
})

test('abort from every non-final state reaches aborted; final states ignore it', () => {
  const prefixes: Record<string, Array<{ type: string; [k: string]: unknown }>> = {
    idle: [],
    'step-gate': [{ type: 'turn.start' }],
    streaming: [...started],
    'retry-waiting': [...started, { type: 'step.failed', error: { name: 'E', message: 'm' }, overflow: false, retryDelayMs: 1 }],
    'tool-running': [...started, { type: 'step.finished', finishReason: 'tool-calls', toolCalls: 1, overflow: false }],
    compacting: [...started, { type: 'step.failed', error: { name: 'E', message: 'm' }, overflow: true, retryDelayMs: null }],
  }
  for (const [state, events] of Object.entries(prefixes)) {
    const { states } = replay([...events, { type: 'turn.abort' }])
    expect(states.at(-2)).toBe(state)
    expect(states.at(-1)).toBe('aborted')
  }
  const done = replay([...started, { type: 'step.finished', finishReason: 'stop', toolCalls: 0, overflow: false }])
  expect(done.snapshot.status).toBe('done')
  const actor = createActor(turnMachine, { input, snapshot: done.snapshot }).start()
  actor.send({ type: 'turn.abort' })
  expect(turnStateName(actor.getSnapshot())).toBe('completed')
})

test('@xstate/graph loads the machine and reaches every state', () => {
  const map = getAdjacencyMap(turnMachine, {
    input,
    events: [
      { type: 'turn.start' },
      { type: 'gate.continue' },
      { type: 'turn.abort' },
      { type: 'step.finished', finishReason: 'stop', toolCalls: 0, overflow: false },
      { type: 'step.failed', error: { name: 'E', message: 'm' }, overflow: false, retryDelayMs: 5 },
    ],
    serializeState: (s: { value: unknown }) => JSON.stringify(s.value),
  } as never)
  const reached = new Set(Object.values(map).map((entry) => JSON.stringify((entry as { state: { value: unknown } }).state.value)))
  for (const value of ['idle', { running: 'step-gate' }, { running: { step: 'streaming' } }, { running: { step: 'retry-waiting' } }, 'completed', 'aborted']) expect(reached).toContain(JSON.stringify(value))
})

test('the stored state names are the leaves of the chart: unique, kebab-case, the contract\'s', () => {
  const leaves: string[] = []
  const walk = (node: { key: string; type: string; states: Record<string, never> }) => {
    for (const child of Object.values(node.states) as Array<{ key: string; type: string; states: Record<string, never> }>) {
      if (child.type === 'atomic' || child.type === 'final') leaves.push(child.key)
      walk(child)
    }
  }
  walk(turnMachine.root as never)
  expect(new Set(leaves).size).toBe(leaves.length)
  expect(leaves.sort()).toEqual(
    ['aborted', 'awaiting-approval', 'awaiting-deferred', 'call-in-doubt', 'compacting', 'compaction-retry-waiting', 'completed', 'failed', 'idle', 'interrupted', 'retry-waiting', 'sleeping', 'step-gate', 'streaming', 'throttled', 'tool-running'].sort(),
  )
  for (const leaf of leaves) expect(leaf).toMatch(/^[a-z]+(-[a-z]+)*$/)
  expect([...retryWaitStates].sort()).toEqual(['compaction-retry-waiting', 'retry-waiting'])
  expect(chartEdges()).toContainEqual({ source: 'retry-waiting', event: 'xstate.after.retryDelay.turn.running.step.retry-waiting', guard: null, target: 'streaming' })
})

test('the diagram tells the behaviour in at most 46 edges (the root-level abort counted once); turn.fail and turn.crashed are written once for running', () => {
  const edges = diagramEdges()
  const rootEdges = (turnMachine.root as unknown as { transitions: Map<string, unknown[]> }).transitions.size
  // (31 with the step gate, 33 with structured output's check, 37 with the waits on tool calls: tools.waiting, call.resolved,
  // the way back to tool-running and the way from in doubt to deferred; 40 with the sleep's way in from deferred;
  // 45 with the step gate's verdicts decided after the tools; 46 with fallback models; 48 with the rate limit's wait;
  // docs/chart.md lists them and why each one added is there)
  expect(edges.length + rootEdges).toBeLessThanOrEqual(48)
  expect(edges.filter((e) => e.event === 'turn.crashed')).toEqual([{ source: 'running', event: 'turn.crashed', guard: null, target: 'interrupted' }])
  expect(edges.filter((e) => e.event === 'turn.fail').map((e) => e.source).sort()).toEqual(['idle', 'running'])
})

test('a crash resumes where it happened (deep history): the step restarts as a new step, a retry wait keeps its attempt', () => {
  const failed = (retryDelayMs: number | null, overflow = false) => ({ type: 'step.failed', error: { name: 'E', message: 'm' }, overflow, retryDelayMs })
  const crashAndRecover = (events: Array<{ type: string; [k: string]: unknown }>) => {
    const { snapshot } = replay([...events, { type: 'turn.crashed' }])
    expect(turnStateName(snapshot)).toBe('interrupted')
    // recovery restores the replayed snapshot with its history, as recover-turns.ts does, and
    // restarts the step when a model call was in flight (the crash was in streaming)
    const crashedIn = turnStateName(replay(events).snapshot)
    const restored = turnMachine.resolveState({ value: snapshot.value, context: snapshot.context, historyValue: snapshot.historyValue })
    const [next] = transition(turnMachine, restored, { type: 'turn.recover', retryDelayMs: 7, ...(crashedIn === 'streaming' ? { restartStep: true } : {}) })
    return next
  }
  const streaming = crashAndRecover([...started])
  // a new step, through the gate: its verdict starts step 2
  expect([turnStateName(streaming), streaming.context.step]).toEqual(['step-gate', 1])
  const [restarted] = transition(turnMachine, streaming, { type: 'gate.continue' })
  expect([turnStateName(restarted), restarted.context.step, restarted.context.attempt]).toEqual(['streaming', 2, 1])
  const waiting = crashAndRecover([...started, failed(300)])
  expect([turnStateName(waiting), waiting.context.step, waiting.context.attempt, waiting.context.retryDelayMs]).toEqual(['retry-waiting', 1, 1, 7])
  const compactionWait = crashAndRecover([...started, failed(null, true), { type: 'compaction.failed', error: { name: 'E', message: 'm' }, retryDelayMs: 5 }])
  expect(turnStateName(compactionWait)).toBe('compaction-retry-waiting')
  const [compacting] = transition(turnMachine, compactionWait, { type: 'xstate.after.retryDelay.turn.running.compaction.compaction-retry-waiting' } as never)
  expect([turnStateName(compacting), compacting.context.attempt, compacting.context.compactions]).toEqual(['compacting', 2, 1])
  const tools = crashAndRecover([...started, { type: 'step.finished', finishReason: 'tool-calls', toolCalls: 1, overflow: false }])
  expect([turnStateName(tools), tools.context.step]).toEqual(['tool-running', 1])
})

test('an overflow that may not compact fails the turn in the same transition (nothing is summarised)', () => {
  let [snapshot] = initialTransition(turnMachine, { ...input, autoCompact: false })
  ;[snapshot] = transition(turnMachine, snapshot, { type: 'turn.start' })
  ;[snapshot] = transition(turnMachine, snapshot, { type: 'gate.continue' })
  ;[snapshot] = transition(turnMachine, snapshot, { type: 'step.finished', finishReason: 'stop', toolCalls: 0, overflow: true })
  expect(turnStateName(snapshot)).toBe('failed')
  expect(snapshot.context.error).toMatchObject({ name: 'ContextOverflowError', reason: 'auto-compaction-off' })
})

test('docs/architecture.md shows the current chart (run npm run chart:docs after changing it)', () => {
  const doc = fs.readFileSync(path.resolve(__dirname, '../../docs/architecture.md'), 'utf8')
  expect(currentChartBlock(doc)).toBe(renderChartBlock())
})

test('turn.fail is taken in idle and in every state inside running, not in interrupted (left for recovery)', () => {
  const error = { name: 'E', message: 'm' }
  const prefixes: Record<string, Array<{ type: string; [k: string]: unknown }>> = {
    idle: [],
    'step-gate': [{ type: 'turn.start' }],
    streaming: [...started],
    'retry-waiting': [...started, { type: 'step.failed', error, overflow: false, retryDelayMs: 1 }],
    'awaiting-approval': [...started, { type: 'step.finished', finishReason: 'tool-calls', toolCalls: 1, overflow: false, approvals: ['c1'] }],
    'tool-running': [...started, { type: 'step.finished', finishReason: 'tool-calls', toolCalls: 1, overflow: false }],
    compacting: [...started, { type: 'step.failed', error, overflow: true, retryDelayMs: null }],
    'compaction-retry-waiting': [...started, { type: 'step.failed', error, overflow: true, retryDelayMs: null }, { type: 'compaction.failed', error, retryDelayMs: 1 }],
  }
  for (const [state, events] of Object.entries(prefixes)) {
    const { states, snapshot } = replay([...events, { type: 'turn.fail', error: { name: 'StorageError', message: 'disk full' } }])
    expect(states.slice(-2)).toEqual([state, 'failed'])
    expect(snapshot.context.error).toEqual({ name: 'StorageError', message: 'disk full' })
  }
  const { states } = replay([...started, { type: 'turn.crashed' }, { type: 'turn.fail', error }])
  expect(states.slice(-2)).toEqual(['interrupted', 'interrupted'])
})

test('the states recovery writes a crash in are the ones tagged interruptible; the retry waits are tagged retry-wait', () => {
  expect([...interruptibleStates].sort()).toEqual(['compacting', 'compaction-retry-waiting', 'retry-waiting', 'step-gate', 'streaming', 'tool-running'])
  expect([...retryWaitStates].every((state) => interruptibleStates.has(state))).toBe(true)
})

test('a refused overflow never enters compaction: from a final answer, a provider error or the step boundary it goes straight to failed', () => {
  const error = { name: 'E', message: 'm' }
  const refused = { ...input, autoCompact: false }
  const fromBoundary = (() => {
    let [snapshot] = initialTransition(turnMachine, refused)
    const seen: string[] = []
    for (const event of [
      ...started,
      { type: 'step.finished', finishReason: 'tool-calls', toolCalls: 1, overflow: true },
      { type: 'tools.finished', overflow: true },
    ]) {
      ;[snapshot] = transition(turnMachine, snapshot, event as never)
      seen.push(turnStateName(snapshot))
    }
    return { seen, snapshot }
  })()
  expect(fromBoundary.seen).toEqual(['step-gate', 'streaming', 'tool-running', 'failed'])
  expect(fromBoundary.snapshot.context).toMatchObject({ compactions: 0, error: { name: 'ContextOverflowError', reason: 'auto-compaction-off' } })
  let [snapshot] = initialTransition(turnMachine, refused)
  ;[snapshot] = transition(turnMachine, snapshot, { type: 'turn.start' })
  ;[snapshot] = transition(turnMachine, snapshot, { type: 'gate.continue' })
  ;[snapshot] = transition(turnMachine, snapshot, { type: 'step.failed', error, overflow: true, retryDelayMs: null })
  expect(turnStateName(snapshot)).toBe('failed')
  expect(snapshot.context.compactions).toBe(0)
})

test('after a compaction the event says where the turn goes: completed after a final answer, a new step otherwise', () => {
  const overflowed = [...started, { type: 'step.finished', finishReason: 'stop', toolCalls: 0, overflow: true }]
  expect(replay([...overflowed, { type: 'compaction.finished', completes: true }]).states.slice(-2)).toEqual(['compacting', 'completed'])
  const next = replay([...overflowed, { type: 'compaction.finished', completes: false }, { type: 'gate.continue' }])
  expect(next.states.slice(-2)).toEqual(['step-gate', 'streaming'])
  expect(next.snapshot.context.step).toBe(2)
})

test('the diagram draws an arrow into every state of the chart, the root-level abort included', () => {
  const mermaid = toMermaid()
  const id = (key: string) => key.replace(/[-.]/g, '_')
  const entered = new Set([...mermaid.matchAll(/-->\s*([\w]+)/g)].map((m) => m[1]))
  const states: string[] = []
  const walk = (node: { key: string; type: string; states: Record<string, never> }) => {
    for (const child of Object.values(node.states) as Array<{ key: string; type: string; states: Record<string, never> }>) {
      if (child.type !== 'history') states.push(child.key)
      walk(child)
    }
  }
  walk(turnMachine.root as never)
  expect(states.filter((state) => !entered.has(id(state)))).toEqual([])
  expect(mermaid).toContain('running --> aborted: turn.abort')
})

test('calls in doubt and deferred wait in awaiting-calls: each resolution is a context-only row; the last one, or a retry, leads back to tool-running', () => {
  const toolStep = [...started, { type: 'step.finished', finishReason: 'tool-calls', toolCalls: 2, overflow: false }]
  const waiting = { type: 'tools.waiting', inDoubt: ['c1'], deferred: ['c2'], deadline: 500 }
  const resolved = (callId: string, how: string, deadline: number | null = null) => ({ type: 'call.resolved', callId, how, deadline })
  // in doubt first; once no call is in doubt, the deferred one goes on waiting; then tool-running
  let { states, snapshot } = replay([...toolStep, waiting])
  expect([states.at(-1), snapshot.context.inDoubtCalls, snapshot.context.deferredCalls, snapshot.context.callDeadline]).toEqual(['call-in-doubt', ['c1'], ['c2'], 500])
  ;({ states, snapshot } = replay([...toolStep, waiting, resolved('c1', 'output', 500)]))
  expect(states.at(-1)).toBe('awaiting-deferred')
  ;({ states } = replay([...toolStep, waiting, resolved('c1', 'output', 500), resolved('zz', 'output'), resolved('c2', 'expired')]))
  expect(states.slice(-3)).toEqual(['awaiting-deferred', 'awaiting-deferred', 'tool-running'])
  // a retry runs the call again at once; the waiting calls are forgotten on leaving the wait (the
  // deferred one still waits on its part, and the tools' actor reports it again)
  ;({ states, snapshot } = replay([...toolStep, waiting, resolved('c1', 'retry', 500)]))
  expect(states.at(-1)).toBe('tool-running')
  expect([snapshot.context.inDoubtCalls, snapshot.context.deferredCalls, snapshot.context.callDeadline]).toEqual([[], [], null])
  ;({ states } = replay([...toolStep, waiting, resolved('c1', 'retry', 500), { type: 'tools.waiting', inDoubt: [], deferred: ['c2'], deadline: 500 }]))
  expect(states.at(-1)).toBe('awaiting-deferred')
  const resultWaits = [...waitingStates()].filter(([, wait]) => wait.awaits === 'result').map(([state]) => state)
  expect(resultWaits.sort()).toEqual(['awaiting-deferred', 'call-in-doubt', 'sleeping'])
  expect(resultWaits.some((state) => interruptibleStates.has(state))).toBe(false)
})

test('each waiting state says what it means on the state (meta.wait), and nothing else does', () => {
  expect(Object.fromEntries([...waitingStates()].map(([state, wait]) => [state, [wait.awaits, wait.settledBy, wait.parks, wait.uiFinish]]))).toEqual({
    'awaiting-approval': ['decision', ['tool.approved', 'tool.denied'], true, 'tool-calls'],
    'call-in-doubt': ['result', ['call.resolved'], true, 'tool-calls'],
    'awaiting-deferred': ['result', ['call.resolved'], true, 'tool-calls'],
    sleeping: ['result', ['call.resolved'], true, 'tool-calls'],
    // (a UI stream follows a throttled turn through its wait: nobody on the page settles it)
    throttled: ['time', ['throttle.lifted'], true, undefined],
  })
  for (const state of ['idle', 'step-gate', 'streaming', 'tool-running', 'retry-waiting', 'compacting', 'interrupted', 'completed']) expect(waitOf(state)).toBeUndefined()
  // A waiting state has nothing in flight: recovery resumes it as it is, it is never interrupted.
  for (const state of waitingStates().keys()) expect(interruptibleStates.has(state)).toBe(false)
  // Each event that settles a wait is one the state (or its parent) takes.
  type Node = { key: string; parent?: Node; states: Record<string, Node>; transitions: Map<string, unknown> }
  const find = (node: Node, key: string): Node | undefined => (node.key === key ? node : Object.values(node.states).map((child) => find(child, key)).find(Boolean))
  const accepts = (node: Node | undefined, event: string): boolean =>
    !!node && ([...node.transitions.keys()].some((on) => on === event || (on.endsWith('.*') && event.startsWith(on.slice(0, -1)))) || accepts(node.parent, event))
  for (const [state, wait] of waitingStates()) {
    for (const event of wait.settledBy) expect([state, event, accepts(find(turnMachine.root as unknown as Node, state), event)]).toEqual([state, event, true])
  }
})

test('a turn whose waiting calls all settle themselves at a time sleeps; a deferred call waiting for the world keeps it in awaiting-deferred until it is settled', () => {
  const toolStep = [...started, { type: 'step.finished', finishReason: 'tool-calls', toolCalls: 2, overflow: false }]
  const resolved = (callId: string, how: string) => ({ type: 'call.resolved', callId, how, deadline: null })
  // only a sleep: straight to sleeping (one row), left when its call is settled (its deadline, or wake)
  let { states, snapshot } = replay([...toolStep, { type: 'tools.waiting', inDoubt: [], deferred: ['s1'], sleeping: ['s1'], deadline: 9_000 }])
  expect([states.at(-1), snapshot.context.sleepingCalls, snapshot.context.callDeadline]).toEqual(['sleeping', ['s1'], 9_000])
  expect(waitOf('sleeping')).toMatchObject({ parks: true, settledBy: ['call.resolved'] })
  ;({ states } = replay([...toolStep, { type: 'tools.waiting', inDoubt: [], deferred: ['s1'], sleeping: ['s1'], deadline: 9_000 }, resolved('s1', 'expired')]))
  expect(states.slice(-2)).toEqual(['sleeping', 'tool-running'])
  // a sleep beside a deferred call: the deferred one is awaited first, then the turn sleeps
  const both = { type: 'tools.waiting', inDoubt: [], deferred: ['d1', 's1'], sleeping: ['s1'], deadline: 9_000 }
  ;({ states } = replay([...toolStep, both]))
  expect(states.at(-1)).toBe('awaiting-deferred')
  ;({ states, snapshot } = replay([...toolStep, both, resolved('d1', 'output')]))
  expect([states.at(-1), snapshot.context.deferredCalls]).toEqual(['sleeping', ['s1']])
  // a log written before sleeps existed (no `sleeping` in the event) never sleeps
  ;({ states } = replay([...toolStep, { type: 'tools.waiting', inDoubt: [], deferred: ['d1'], deadline: 9_000 }]))
  expect(states.at(-1)).toBe('awaiting-deferred')
})
