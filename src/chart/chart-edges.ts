/**
 * The edges of the turn chart (source, event, guard, target), read from the machine
 * definition itself, so diagrams and coverage reports cannot drift from the code.
 */
import type { AnyStateMachine } from 'xstate'
import { turnMachine } from '../../machines/turn.machine'

export interface ChartEdge {
  source: string
  event: string
  /** Guard as written: a name, or `a && b` for `and([...])`; null when unguarded. */
  guard: string | null
  target: string
}

/** A guard as written: its name, `a && b` for `and([...])`, `!a` for `not(a)`; null when unguarded. */
export function guardName(guard: unknown): string | null {
  if (guard === undefined || guard === null) return null
  if (typeof guard === 'string') return guard
  if (typeof guard === 'object' && 'type' in (guard as object)) return String((guard as { type: unknown }).type)
  if (typeof guard === 'function') {
    const fn = guard as { guards?: unknown[]; guard?: unknown; name?: string }
    if (Array.isArray(fn.guards)) return fn.guards.map(guardName).join(fn.name === 'or' ? ' || ' : ' && ')
    if (fn.guard !== undefined) return `!${guardName(fn.guard)}`
    return fn.name || 'inline'
  }
  return 'inline'
}

interface ChartNode {
  key: string
  type: string
  parent?: ChartNode
  states: Record<string, ChartNode>
  transitions: Map<string, Array<{ target?: readonly ChartNode[]; guard?: unknown }>>
  always?: Array<{ target?: readonly ChartNode[]; guard?: unknown }>
  initial?: { target?: readonly ChartNode[] }
}

/** Every state node below the root, parents before children (history nodes included). */
function descendants(node: ChartNode): ChartNode[] {
  return Object.values(node.states).flatMap((child) => [child, ...descendants(child)])
}

/** A node's name in edges: its key (unique in the chart); a history node is `<parent>.history`. */
export function nodeName(node: { key: string; type: string; parent?: { key: string } }): string {
  return node.type === 'history' && node.parent ? `${node.parent.key}.${node.key}` : node.key
}

/** The edges a node defines itself (`on`, `after`, invoke `onDone`/`onError`, `always`), in order. */
function ownEdges(node: ChartNode): ChartEdge[] {
  const edges: ChartEdge[] = []
  const definitions: Array<[string, Array<{ target?: readonly ChartNode[]; guard?: unknown }>]> = [
    ...node.transitions,
    ...(node.always?.length ? [['', node.always] as [string, typeof node.always]] : []),
  ]
  for (const [event, list] of definitions) {
    for (const definition of list) {
      // A targetless transition (an action only) is an edge back to its own state.
      for (const target of definition.target ?? [node]) {
        edges.push({ source: nodeName(node), event, guard: guardName(definition.guard), target: nodeName(target) })
      }
    }
  }
  return edges
}

/**
 * Every edge of the machine as written, each once (an edge of a parent state, such as
 * `running --turn.fail--> failed`, is one edge), plus the root-level events (`turn.abort`)
 * expanded to each non-final leaf state, so that the model-based tests abort from every one.
 *
 * @example
 * chartEdges().length // the number of transitions the model-based tests must walk
 */
export function chartEdges(machine: AnyStateMachine = turnMachine): ChartEdge[] {
  const root = machine.root as unknown as ChartNode
  const nodes = descendants(root).filter((node) => node.type !== 'history')
  const edges = nodes.flatMap(ownEdges)
  const leaves = nodes.filter((node) => node.type === 'atomic')
  for (const edge of ownEdges(root)) {
    for (const leaf of leaves) edges.push({ ...edge, source: leaf.key })
  }
  return edges
}

/** The edges drawn in the diagram: every edge as written, root-level events left to a note. */
export function diagramEdges(machine: AnyStateMachine = turnMachine): ChartEdge[] {
  const root = machine.root as unknown as ChartNode
  return descendants(root).filter((node) => node.type !== 'history').flatMap(ownEdges)
}

/**
 * Short event names for test coverage keys: `xstate.after.retryDelay.turn.running.step.retry-waiting`
 * → `after(retryDelay)`. Users see `readableEvent`'s names (`retry timer`: the CLI, the viewer's chart and path).
 */
export function shortEvent(event: string): string {
  if (event === '') return 'always'
  const after = /^xstate\.after\.([^.]+)\./.exec(event)
  if (after) return `after(${after[1]})`
  return event
}

/**
 * The chart as a Mermaid `stateDiagram-v2`, parent states drawn as composite states. A
 * root-level edge (abort) is drawn from each top-level state it can leave (`idle`, `running`,
 * `interrupted`), so an arrow enters every state; an edge into a history state is drawn to its
 * parent, marked `(history)`.
 *
 * @example
 * console.log(toMermaid())
 */
export function toMermaid(machine: AnyStateMachine = turnMachine): string {
  const root = machine.root as unknown as ChartNode
  // Mermaid ids cannot hold '-': declare `state "tool-running" as tool_running`.
  const id = (key: string) => key.replace(/[-.]/g, '_')
  const lines = ['stateDiagram-v2']
  const declare = (node: ChartNode, indent: string) => {
    for (const child of Object.values(node.states)) {
      if (child.type === 'history') continue
      if (child.key !== id(child.key)) lines.push(`${indent}state "${child.key}" as ${id(child.key)}`)
    }
    const initial = node.initial?.target?.[0]
    if (initial) lines.push(`${indent}[*] --> ${id(initial.key)}`)
    for (const child of Object.values(node.states)) {
      if (child.type !== 'compound') continue
      lines.push(`${indent}state ${id(child.key)} {`)
      declare(child, `${indent}  `)
      lines.push(`${indent}}`)
    }
  }
  declare(root, '  ')
  for (const edge of diagramEdges(machine)) {
    const history = edge.target.endsWith('.history')
    const target = history ? edge.target.slice(0, -'.history'.length) : edge.target
    // The event as the transition log stores it: one name per event in logs, CLI and docs.
    const label = `${edge.event || 'always'}${edge.guard ? ` [${edge.guard}]` : ''}${history ? ' (history)' : ''}`
    lines.push(`  ${id(edge.source)} --> ${id(target)}: ${label}`)
  }
  const topLevel = Object.values(root.states).filter((node) => node.type !== 'final' && node.type !== 'history')
  for (const edge of ownEdges(root)) {
    for (const node of topLevel) lines.push(`  ${id(node.key)} --> ${id(edge.target)}: ${edge.event} (any state)`)
  }
  for (const node of Object.values(root.states)) {
    if (node.type === 'final') lines.push(`  ${id(node.key)} --> [*]`)
  }
  return lines.join('\n')
}
