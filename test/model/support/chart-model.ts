/**
 * The chart as a graph for the model-based tests: edge keys, "which edge did this event take
 * from this snapshot" (asked of the machine itself), the shortest path to each edge over the
 * real machine, and the pure replay of a persisted transition log.
 */
import { initialTransition, transition, type AnyEventObject, type SnapshotFrom } from 'xstate'
import { turnMachine, turnStateName } from '../../../machines/turn.machine'
import type { TurnInput } from '../../../machines/turn.types'
import { chartEdges, guardName, nodeName, shortEvent, type ChartEdge } from '../../../src/chart/chart-edges'

export type TurnSnapshot = SnapshotFrom<typeof turnMachine>
export type ModelEvent = AnyEventObject

/** `streaming --step.failed [retryAllowed]--> retry-waiting`: the name of an edge everywhere. */
export function edgeKey(edge: ChartEdge): string {
  return `${edge.source} --${shortEvent(edge.event)}${edge.guard ? ` [${edge.guard}]` : ''}--> ${edge.target}`
}

/** Every edge of the machine, as keys (the ground truth M). */
export function allEdgeKeys(): string[] {
  return chartEdges().map(edgeKey)
}

/** The stored name of a snapshot's state (the active leaf). */
function stateName(snapshot: TurnSnapshot): string {
  return turnStateName(snapshot)
}

interface GraphNode {
  key: string
  type: string
  parent?: GraphNode
  always?: Array<{ target?: readonly GraphNode[]; guard?: unknown }>
}
const isWithin = (node: GraphNode | undefined, ancestor: GraphNode): boolean => !!node && (node === ancestor || isWithin(node.parent, ancestor))

/**
 * The edge `event` takes from `snapshot`, as the machine selects it (guards evaluated on the
 * real context), or null when the event is ignored there (or the snapshot is final). An edge
 * of a parent state is named by the parent (`running --turn.fail--> failed`); a root-level
 * edge (`turn.abort`) by the leaf it leaves.
 */
export function edgeOf(snapshot: TurnSnapshot, event: ModelEvent): string | null {
  return takenTransition(snapshot, event)?.edge ?? null
}

function takenTransition(snapshot: TurnSnapshot, event: ModelEvent): { edge: string; target: GraphNode; targetless: boolean } | null {
  if (snapshot.status !== 'active') return null
  const enabled = turnMachine.getTransitionData(snapshot as never, event as never) ?? []
  const taken = enabled[0]
  if (!taken) return null
  const sourceNode = taken.source as unknown as GraphNode
  const source = taken.source === turnMachine.root ? stateName(snapshot) : nodeName(sourceNode)
  // A targetless transition (an action only) is an edge back to its own state.
  const targetNode = (taken.target?.[0] ?? taken.source) as unknown as GraphNode
  const target = taken.target?.[0] ? nodeName(targetNode) : source
  return { edge: edgeKey({ source, event: taken.eventType, guard: guardName(taken.guard), target }), target: targetNode, targetless: !taken.target?.[0] }
}

/** Every node of the chart that has eventless (`always`) edges. */
function nodesWithAlways(): GraphNode[] {
  const all: GraphNode[] = []
  const visit = (node: { states: Record<string, unknown> }) => {
    for (const child of Object.values(node.states) as Array<GraphNode & { states: Record<string, unknown> }>) {
      if (child.always?.length) all.push(child)
      visit(child)
    }
  }
  visit(turnMachine.root as never)
  return all
}

/**
 * The eventless (`always`) edges taken in the same step as `event` (e.g. entering `compaction`
 * when it may not compact, or the last approval leading on to `tool-running`): an `always`
 * of the state the event's edge entered (or stayed in) whose target the step ended in.
 */
export function eventlessEdgesOf(snapshot: TurnSnapshot, event: ModelEvent, next: TurnSnapshot): string[] {
  const taken = takenTransition(snapshot, event)
  if (!taken) return []
  const before = snapshot._nodes as unknown as GraphNode[]
  const edges: string[] = []
  const reached = next._nodes as unknown as GraphNode[]
  for (const node of nodesWithAlways()) {
    if (!isWithin(taken.target, node) && !isWithin(node, taken.target)) continue
    // A targetless transition (an action only) enters no state: only a state already active can leave by its `always`.
    if (taken.targetless && !before.includes(node)) continue
    if (reached.includes(node)) continue // it stayed there: no eventless edge left it
    for (const definition of node.always ?? []) {
      const target = definition.target?.[0]
      if (target && reached.includes(target)) {
        edges.push(edgeKey({ source: nodeName(node), event: '', guard: guardName(definition.guard), target: nodeName(target) }))
        break
      }
    }
  }
  return edges
}

export interface PlannedStep {
  /** Snapshot before the event. */
  before: TurnSnapshot
  /** Snapshot after it. */
  after: TurnSnapshot
  event: ModelEvent
  edge: string
  /** Eventless edges taken in the same step, after `edge`. */
  eventless: string[]
  from: string
  to: string
}

/**
 * What the real engine knows that the chart does not keep: the last finished step (the step
 * boundary judges its usage again) and why the turn is compacting (after a final answer, the
 * compaction completes the turn). Events carry these decisions; a path is one the engine can
 * walk only when its events agree with them.
 */
interface EngineFacts {
  /** `answered`: a final answer of a turn with structured output (the gate checks it before any rule). */
  lastStep: { toolCalls: number; overflow: boolean; answered?: boolean } | null
  compactingAfterAnswer: boolean | null
  /** What the step's waiting call is (`tools.waiting`): only a call in doubt can be retried, only a deferred one's result handed in. */
  waiting?: 'in-doubt' | 'deferred' | 'sleeping' | null
}
const noFacts: EngineFacts = { lastStep: null, compactingAfterAnswer: null }

/**
 * The step gate's row is written with the row that leaves it, so the engine never has it as
 * its last committed row: a failed write (`turn.fail`) and a crash (`turn.crashed`) leave the
 * state before it. Steering is taken at a gate after a step (none can reach a turn before its
 * prompt is stored).
 */
function gateAllows(event: ModelEvent, before: TurnSnapshot): boolean {
  if (stateName(before) !== 'step-gate') return true
  if (event.type === 'turn.fail' || event.type === 'turn.crashed') return false
  return event.type !== 'turn.steered' || before.context.step > 0
}

/** The facts after `event` took the machine from `before` to `after`; null when the engine could not send that event. */
function nextFacts(facts: EngineFacts, event: ModelEvent, after: TurnSnapshot, before?: TurnSnapshot): EngineFacts | null {
  if (before && !gateAllows(event, before)) return null
  // Structured output: at the gate after a final answer, only the output check decides (complete,
  // send it back once, fail; or an abort); `output.retry` only there.
  if (before && stateName(before) === 'step-gate') {
    const answered = facts.lastStep?.answered === true
    if (event.type === 'output.retry' && (!answered || before.context.outputRetries >= 1)) return null
    if (answered && !['gate.complete', 'output.retry', 'gate.fail', 'turn.abort'].includes(event.type)) return null
  }
  const entersCompaction = stateName(after) === 'compacting'
  switch (event.type) {
    case 'step.finished': {
      const lastStep = { toolCalls: event.toolCalls as number, overflow: event.overflow as boolean, ...(event.checksOutput ? { answered: true } : {}) }
      return { lastStep, compactingAfterAnswer: entersCompaction ? lastStep.toolCalls === 0 : facts.compactingAfterAnswer }
    }
    case 'step.failed':
      return { ...facts, compactingAfterAnswer: entersCompaction ? false : facts.compactingAfterAnswer }
    case 'tools.finished':
      if (event.overflow !== (facts.lastStep?.overflow ?? false)) return null
      return { ...facts, compactingAfterAnswer: entersCompaction ? false : facts.compactingAfterAnswer }
    case 'tools.waiting':
      return { ...facts, waiting: (event.inDoubt as string[]).length > 0 ? 'in-doubt' : ((event.sleeping as string[] | undefined) ?? []).length > 0 ? 'sleeping' : 'deferred' }
    case 'call.resolved':
      if ((event.how === 'retry') !== (facts.waiting === 'in-doubt')) return null
      return { ...facts, waiting: null }
    case 'compaction.finished':
      return event.completes === (facts.compactingAfterAnswer === true) ? { ...facts, compactingAfterAnswer: null } : null
    default:
      return facts
  }
}

/**
 * For each edge, the shortest event sequence from the initial state that ends with it: a
 * breadth-first search on the real machine (xstate's pure `transition()`, the concrete events of
 * the recipes), keyed by what decides the chart's future (the state, the context its guards
 * read, and what the engine knows that the chart does not keep). Each transition names the edge
 * it took (and the eventless edges of its step), so the first time an edge is taken is the
 * shortest path to it, and the search stops once every edge has one. A transition the engine
 * could not make (an ignored event, events that disagree with the engine's facts) is not
 * followed: no path through it is walkable.
 */
export function shortestPathsByEdge(input: TurnInput, events: ModelEvent[]): Map<string, ModelEvent[]> {
  const wanted = new Set(allEdgeKeys())
  const byEdge = new Map<string, ModelEvent[]>()
  // The chart's actions make error records (a step limit's) in many of the searched states: no
  // stack traces for those during the search.
  const stackTraceLimit = Error.stackTraceLimit
  Error.stackTraceLimit = 0
  try {
    const [initial] = initialTransition(turnMachine, input)
    const seen = new Set<string>([searchKey(initial, noFacts, input)])
    const queue: Array<{ snapshot: TurnSnapshot; facts: EngineFacts; path: ModelEvent[] } | undefined> = [{ snapshot: initial, facts: noFacts, path: [] }]
    for (let head = 0; head < queue.length && byEdge.size < wanted.size; head++) {
      const { snapshot, facts, path } = queue[head]!
      queue[head] = undefined // let the expanded snapshots go
      for (const event of events) {
        const edge = edgeOf(snapshot, event)
        if (!edge) continue
        const [next] = transition(turnMachine, snapshot, event as never)
        const nextFacts_ = nextFacts(facts, event, next, snapshot)
        if (!nextFacts_) continue
        const sequence = [...path, event]
        for (const taken of [edge, ...eventlessEdgesOf(snapshot, event, next)]) if (!byEdge.has(taken)) byEdge.set(taken, sequence)
        const key = searchKey(next, nextFacts_, input)
        if (seen.has(key)) continue
        seen.add(key)
        queue.push({ snapshot: next, facts: nextFacts_, path: sequence })
      }
    }
    return byEdge
  } finally {
    Error.stackTraceLimit = stackTraceLimit
  }
}

/**
 * What decides where a snapshot can go: its state, the context the guards and the engine's
 * facts read (the compaction count, one past the limit at most; the waiting calls; the step
 * number once it reaches the step limit; the structured output's retries), and those facts.
 */
function searchKey(state: TurnSnapshot, facts: EngineFacts, input: TurnInput): string {
  const { context } = state
  return [
    JSON.stringify(state.value),
    state.status,
    Math.min(context.compactions, input.maxCompactions + 1),
    context.pendingApprovals.join(','),
    context.inDoubtCalls.join(','),
    context.deferredCalls.join(','),
    context.callRetried,
    Math.min(context.step, context.maxSteps ?? 0),
    context.outputRetries,
    JSON.stringify(facts),
  ].join('|')
}

/** Replays `events` with the pure transition function; every event must take an edge. */
export function planPath(input: TurnInput, events: ModelEvent[]): { ok: true; steps: PlannedStep[] } | { ok: false; at: number } {
  let [snapshot] = initialTransition(turnMachine, input)
  const steps: PlannedStep[] = []
  for (const [i, event] of events.entries()) {
    const edge = edgeOf(snapshot, event)
    if (!edge) return { ok: false, at: i }
    const [next] = transition(turnMachine, snapshot, event as never)
    steps.push({ before: snapshot, after: next, event, edge, eventless: eventlessEdgesOf(snapshot, event, next), from: stateName(snapshot), to: stateName(next) })
    snapshot = next
  }
  return { ok: true, steps }
}

export function isFinal(state: string): boolean {
  const node = (turnMachine.root.states as Record<string, { type: string }>)[state]
  return node?.type === 'final'
}

/** The stored names of the retry waits (their status is `retry`). */
export { retryWaitStates } from '../../../machines/turn.machine'

export interface LogRow {
  seq: number
  from: string
  event: string
  to: string
  payload: Record<string, unknown>
}

/**
 * Replays a persisted log from the turn's stored input with the pure `transition()`. Returns
 * the states reached and the edges taken; `xstate.stop` (a stopped actor) is recorded by the
 * engine as `→ aborted` and replayed as the root `turn.abort` it is equivalent to.
 */
export function replayLog(input: TurnInput, rows: LogRow[]): { states: string[]; edges: Array<string | null>; eventless: string[] } {
  let [snapshot] = initialTransition(turnMachine, input)
  const states: string[] = []
  const edges: Array<string | null> = []
  const eventless: string[] = []
  for (const row of rows) {
    const event = row.event === 'xstate.stop' ? { type: 'turn.abort' } : { ...row.payload, type: row.event }
    edges.push(edgeOf(snapshot, event))
    const [next] = transition(turnMachine, snapshot, event as never)
    eventless.push(...eventlessEdgesOf(snapshot, event, next))
    snapshot = next
    states.push(stateName(snapshot))
  }
  return { states, edges, eventless }
}
