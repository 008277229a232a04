/**
 * The chart as a nested graph to draw: its states as nested boxes (compound states hold their
 * children), an initial marker in each compound state and at the root, and its edges as
 * written (an edge of a parent state leaves the parent's box; `turn.abort`, handled at the
 * root, is drawn from each top-level state, as in the Mermaid diagram). Read from the machine,
 * so the viewer's drawing cannot drift from the code. Also: which drawn edges a logged
 * transition took (`edgesTaken`), for numbering a turn's path on the drawing.
 */
import type { AnyStateMachine } from 'xstate'
import { turnMachine } from '../../machines/turn.machine'
import { guardName } from './chart-edges'
import { readableEvent } from './readable-event'

export interface ChartGraphNode {
  /** The state's key (unique in the chart), or `initial:<parent>` for an initial marker. */
  id: string
  kind: 'atomic' | 'compound' | 'final' | 'initial'
  children: ChartGraphNode[]
}

export interface ChartGraphEdge {
  /** Stable and readable, without spaces: `source>event[guard]>target` (`initial>…` for an initial marker's edge). */
  id: string
  source: string
  /** A state's key; an edge into a history state targets its parent (`history: true`). */
  target: string
  /** As written: `tool.*`, `''` for an eventless (`always`) edge. */
  event: string
  guard: string | null
  /** What the drawing writes on the edge: its event, then its guard (one line each). */
  label: string[]
  kind: 'transition' | 'initial' | 'history' | 'any-state'
}

export interface ChartGraph {
  /** The top-level states and the root's initial marker, each with its children. */
  nodes: ChartGraphNode[]
  edges: ChartGraphEdge[]
}

interface Definition {
  target?: readonly MachineNode[]
  guard?: unknown
  eventType: string
}

interface MachineNode {
  key: string
  type: string
  parent?: MachineNode
  states: Record<string, MachineNode>
  transitions: Map<string, Definition[]>
  always?: Definition[]
  initial?: { target?: readonly MachineNode[] }
}

interface Built {
  graph: ChartGraph
  /** Each transition definition of the machine and the drawn edges it is (several for a root edge). */
  edgesOf: Map<Definition, ChartGraphEdge[]>
  /** Each state by key (history nodes excluded). */
  byKey: Map<string, MachineNode>
}

const built = new WeakMap<AnyStateMachine, Built>()

function build(machine: AnyStateMachine): Built {
  const cached = built.get(machine)
  if (cached) return cached
  const root = machine.root as unknown as MachineNode
  const byKey = new Map<string, MachineNode>()
  const edges: ChartGraphEdge[] = []
  const edgesOf = new Map<Definition, ChartGraphEdge[]>()
  const seen = new Set<string>()
  const add = (definition: Definition | null, edge: Omit<ChartGraphEdge, 'id' | 'label'>) => {
    // No spaces (`overflowed&&mayCompact`): the page lists ids in attributes, space-separated.
    let id = `${edge.source}>${edge.event || 'always'}${edge.guard ? `[${edge.guard.replace(/\s+/g, '')}]` : ''}>${edge.target}${edge.kind === 'history' ? '.history' : ''}`
    if (edge.kind === 'initial') id = `initial>${edge.target}`
    // Two definitions alike in all that is drawn stay two edges (never happens in this chart).
    for (let n = 2; seen.has(id); n++) id = `${id}#${n}`
    seen.add(id)
    // The retry timer by the name the CLI and the page's path use too (`retry timer`), not XState's.
    const event = edge.kind === 'initial' ? [] : [edge.event === '' ? 'always' : readableEvent(edge.event)]
    const guard = edge.guard ? [`[${edge.guard}]`] : []
    const note = edge.kind === 'history' ? ['(history)'] : edge.kind === 'any-state' ? ['(any state)'] : []
    const full: ChartGraphEdge = { ...edge, id, label: [...event, ...guard, ...note] }
    edges.push(full)
    if (definition) edgesOf.set(definition, [...(edgesOf.get(definition) ?? []), full])
  }
  const nodeOf = (state: MachineNode): ChartGraphNode => {
    byKey.set(state.key, state)
    const children = Object.values(state.states).filter((child) => child.type !== 'history')
    const kind = state.type === 'final' ? 'final' : children.length > 0 ? 'compound' : 'atomic'
    const drawn: ChartGraphNode[] = children.map(nodeOf)
    const initial = state.initial?.target?.[0]
    if (initial) {
      drawn.unshift({ id: `initial:${state.key}`, kind: 'initial', children: [] })
    }
    return { id: state.key, kind, children: drawn }
  }
  const topLevel = Object.values(root.states).filter((state) => state.type !== 'history')
  const nodes = topLevel.map(nodeOf)
  const rootInitial = root.initial?.target?.[0]
  if (rootInitial) nodes.unshift({ id: 'initial:root', kind: 'initial', children: [] })
  // Initial markers' edges first, then each state's edges in the order they are written.
  const initialEdges = (state: MachineNode, parentId: string) => {
    const target = state.initial?.target?.[0]
    if (target) add(null, { source: `initial:${parentId}`, target: target.key, event: '', guard: null, kind: 'initial' })
    for (const child of Object.values(state.states)) if (child.type !== 'history') initialEdges(child, child.key)
  }
  initialEdges(root, 'root')
  const ownEdges = (state: MachineNode) => {
    const definitions: Definition[] = [...state.transitions.values()].flat().concat(state.always ?? [])
    for (const definition of definitions) {
      // A targetless transition (an action only) is an edge back to its own state.
      for (const target of definition.target ?? [state]) {
        const history = target.type === 'history'
        add(definition, {
          source: state.key,
          target: history && target.parent ? target.parent.key : target.key,
          event: definition.eventType === '' || state.always?.includes(definition) ? '' : definition.eventType,
          guard: guardName(definition.guard),
          kind: history ? 'history' : 'transition',
        })
      }
    }
    for (const child of Object.values(state.states)) if (child.type !== 'history') ownEdges(child)
  }
  for (const state of topLevel) ownEdges(state)
  // The root's own edges (turn.abort) leave every top-level state that is not final.
  for (const definition of [...root.transitions.values()].flat()) {
    for (const state of topLevel.filter((s) => s.type !== 'final')) {
      for (const target of definition.target ?? []) {
        add(definition, { source: state.key, target: target.key, event: definition.eventType, guard: guardName(definition.guard), kind: 'any-state' })
      }
    }
  }
  const result = { graph: { nodes, edges }, edgesOf, byKey }
  built.set(machine, result)
  return result
}

/**
 * The chart as nested boxes and the edges between them.
 *
 * @example
 * chartGraph().edges.find((e) => e.id === 'streaming>step.finished[hasToolCalls]>tool-running')
 */
export function chartGraph(machine: AnyStateMachine = turnMachine): ChartGraph {
  return build(machine).graph
}

/** A logged transition: the stored names of the leaves it left and entered, and its event. */
export interface LoggedTransition {
  from: string
  to: string
  event: string
}

/**
 * The drawn edges a logged transition took, in order (usually one). The chart's own choice
 * decides between edges alike but for their guards when `selected` is given: the transition
 * definitions the machine selected for the event in the state before
 * (`machine.getTransitionData(before, event)`); without it, the first edge written wins. A
 * transition that passes through a state (a decision settles the last approval, then the
 * eventless edge leaves) takes the event's edge and then the eventless one. `xstate.stop` (a
 * stopped actor, recorded as aborted) is drawn on the `turn.abort` edge; a row whose event the
 * chart does not name (an older turnchart's) on an edge between the same states. Empty when
 * no drawn edge joins the two states.
 *
 * @example
 * edgesTaken({ from: 'streaming', to: 'tool-running', event: 'step.finished' }) // ['streaming>step.finished[hasToolCalls]>tool-running']
 */
export function edgesTaken(row: LoggedTransition, selected?: readonly unknown[], machine: AnyStateMachine = turnMachine): string[] {
  const { graph, edgesOf, byKey } = build(machine)
  const within = (leaf: string, ancestor: string) => {
    for (let node = byKey.get(leaf); node; node = node.parent) if (node.key === ancestor) return true
    return false
  }
  const leaves = (node: MachineNode): MachineNode[] =>
    Object.values(node.states).length === 0 ? [node] : Object.values(node.states).flatMap((child) => (child.type === 'history' ? [] : leaves(child)))
  /** The leaves an edge can enter: its target's initial leaf, or any leaf below it through history. */
  const enters = (edge: ChartGraphEdge, leaf: string) => {
    const target = byKey.get(edge.target)
    if (!target) return false
    if (edge.kind === 'history') return leaves(target).some((node) => node.key === leaf)
    let node: MachineNode | undefined = target
    while (node && Object.values(node.states).length > 0) node = node.initial?.target?.[0]
    return node?.key === leaf
  }
  const names = (edge: ChartGraphEdge, event: string) =>
    edge.event === event || (edge.event.endsWith('.*') && event.startsWith(edge.event.slice(0, -1))) || (event === 'xstate.stop' && edge.event === 'turn.abort')
  const candidates = (from: string, to: string, event: string | null) =>
    graph.edges.filter((e) => e.kind !== 'initial' && within(from, e.source) && enters(e, to) && (event === null || names(e, event)))
  const chosen = new Set(selected?.flatMap((definition) => (edgesOf.get(definition as Definition) ?? []).map((e) => e.id)))
  const pick = (list: ChartGraphEdge[]) => list.find((e) => chosen.has(e.id)) ?? list[0]
  const direct = candidates(row.from, row.to, row.event)
  if (direct.length) return [pick(direct).id]
  // Through its own state, then out by the eventless edge.
  const stay = candidates(row.from, row.from, row.event)
  const out = candidates(row.from, row.to, '')
  if (stay.length && out.length) return [pick(stay).id, out[0].id]
  const between = candidates(row.from, row.to, null)
  return between.length ? [pick(between).id] : []
}
