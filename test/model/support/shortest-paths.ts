/**
 * @xstate/graph's `getShortestPaths` (3.0.4), as the model tests call it (an array of events, a
 * serialisation of our own), with its breadth-first queue read by an index instead of
 * `Array.prototype.shift`. On this chart the graph's queue grows to about a million entries
 * (every event from every state is queued before the duplicates are dropped), and `shift` moves
 * the whole array each time: the search took about 35 s of CPU, nearly all of it in that shift.
 * Same traversal, same order, same paths; a state's key is computed once, when it is queued.
 */
import { createEmptyActor, type AnyActorScope, type AnyEventObject, type AnyStateMachine, type Snapshot } from 'xstate'

export interface PathStep<TState, TEvent> {
  state: TState
  event: TEvent
}

export interface StatePath<TState, TEvent> {
  /** The state the path ends in. */
  state: TState
  /** From the initial state: `{ type: 'xstate.init' }` first, then each event with the state it led to. */
  steps: Array<PathStep<TState, TEvent | { type: 'xstate.init' }>>
  weight: number
}

export interface ShortestPathOptions<TState, TEvent> {
  input: unknown
  events: TEvent[]
  serializeState(state: TState, event: TEvent | undefined, prev: TState | undefined): string
}

/** What @xstate/graph gives a machine's `transition` (a scope whose actor does nothing). */
function mockActorScope(): AnyActorScope {
  const emptyActor = createEmptyActor()
  return {
    self: emptyActor,
    logger: console.log,
    id: '',
    sessionId: Math.random().toString(32).slice(2),
    defer: () => {},
    system: emptyActor.system,
    stopChild: () => {},
    emit: () => {},
    actionExecutor: () => {},
  } as unknown as AnyActorScope
}

/**
 * The shortest path (fewest events) from the machine's initial state to every state key the
 * events reach, as `getShortestPaths(machine, { input, events, serializeState })` returns them.
 */
export function shortestPaths<TState extends Snapshot<unknown>, TEvent extends AnyEventObject>(machine: AnyStateMachine, options: ShortestPathOptions<TState, TEvent>): Array<StatePath<TState, TEvent>> {
  const { events, serializeState } = options
  const serializeEvent = (event: TEvent) => JSON.stringify(event)
  const fromState = machine.getInitialSnapshot(mockActorScope(), options.input) as unknown as TState

  // The adjacency map, breadth first from the initial state (getAdjacencyMap).
  const actorScope = mockActorScope()
  const adjacency = new Map<string, { state: TState; transitions: Map<string, { event: TEvent; state: TState }> }>()
  const queue: Array<{ key: string; state: TState }> = [{ key: serializeState(fromState, undefined, undefined), state: fromState }]
  for (let head = 0; head < queue.length; head++) {
    const { key, state } = queue[head]
    if (adjacency.has(key)) continue
    const transitions = new Map<string, { event: TEvent; state: TState }>()
    adjacency.set(key, { state, transitions })
    for (const event of events) {
      const next = machine.transition(state as never, event, actorScope) as unknown as TState
      transitions.set(serializeEvent(event), { event, state: next })
      const nextKey = serializeState(next, event, state)
      // Already expanded: the original queues it and drops it when it comes out.
      if (!adjacency.has(nextKey)) queue.push({ key: nextKey, state: next })
    }
    queue[head] = undefined as never // let the expanded snapshots go
  }

  // Shortest paths over it (getShortestPaths): every edge weighs 1.
  const weights = new Map<string, { weight: number; state: string | undefined; event: TEvent | undefined }>()
  const states = new Map<string, TState>()
  const fromKey = serializeState(fromState, undefined, undefined)
  states.set(fromKey, fromState)
  weights.set(fromKey, { weight: 0, state: undefined, event: undefined })
  const unvisited = new Set<string>([fromKey])
  const visited = new Set<string>()
  for (const key of unvisited) {
    const prev = states.get(key)!
    const { weight } = weights.get(key)!
    for (const { state: next, event } of adjacency.get(key)!.transitions.values()) {
      const nextKey = serializeState(next, event, prev)
      states.set(nextKey, next)
      const known = weights.get(nextKey)
      if (!known || known.weight > weight + 1) weights.set(nextKey, { weight: weight + 1, state: key, event })
      if (!visited.has(nextKey)) unvisited.add(nextKey)
    }
    visited.add(key)
    unvisited.delete(key)
  }

  const plans = new Map<string, Array<PathStep<TState, TEvent>>>()
  const paths: Array<StatePath<TState, TEvent>> = []
  weights.forEach(({ weight, state: from, event }, key) => {
    const state = states.get(key)!
    const steps = from === undefined ? [] : plans.get(from)!.concat({ state: states.get(from)!, event: event! })
    plans.set(key, steps)
    paths.push({ state, steps: withInit(state, steps), weight })
  })
  return paths
}

/** @xstate/graph's `alterPath`: each step's event is the one that led into its state, `xstate.init` first. */
function withInit<TState, TEvent>(state: TState, steps: Array<PathStep<TState, TEvent>>): StatePath<TState, TEvent>['steps'] {
  if (steps.length === 0) return [{ state, event: { type: 'xstate.init' } }]
  return [...steps.map((step, i) => ({ state: step.state, event: i === 0 ? { type: 'xstate.init' as const } : steps[i - 1].event })), { state, event: steps.at(-1)!.event }]
}
