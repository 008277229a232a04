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

/**
 * Every edge of the machine, root-level events expanded to each non-final state.
 *
 * @example
 * chartEdges().length // the number of transitions the model-based tests must walk
 */
export function chartEdges(machine: AnyStateMachine = turnMachine): ChartEdge[] {
  const edges: ChartEdge[] = []
  const states = Object.values(machine.root.states)
  for (const node of states) {
    for (const [event, definitions] of node.transitions) {
      for (const definition of definitions) {
        // A targetless transition (an action only) is an edge back to its own state.
        for (const target of definition.target ?? [node]) {
          edges.push({ source: node.key, event, guard: guardName(definition.guard), target: target.key })
        }
      }
    }
  }
  for (const [event, definitions] of machine.root.transitions) {
    for (const definition of definitions) {
      for (const target of definition.target ?? []) {
        for (const node of states) {
          if (node.type === 'final') continue
          edges.push({ source: node.key, event, guard: guardName(definition.guard), target: target.key })
        }
      }
    }
  }
  return edges
}

/**
 * Short event names for test coverage keys: `xstate.done.actor.runTools` → `done(runTools)`.
 * Users see the logged name everywhere (CLI, diagrams, docs).
 */
export function shortEvent(event: string): string {
  const done = /^xstate\.done\.actor\.(.+)$/.exec(event)
  if (done) return `done(${done[1]})`
  const error = /^xstate\.error\.actor\.(.+)$/.exec(event)
  if (error) return `error(${error[1]})`
  const after = /^xstate\.after\.([^.]+)\./.exec(event)
  if (after) return `after(${after[1]})`
  return event
}

/**
 * The chart as a Mermaid `stateDiagram-v2`. Root-level events (abort, fail) are drawn once
 * from a note rather than from every state, to keep the diagram readable.
 *
 * @example
 * console.log(toMermaid())
 */
export function toMermaid(machine: AnyStateMachine = turnMachine): string {
  // Mermaid ids cannot hold '-': declare `state "tool-running" as tool_running`.
  const id = (key: string) => key.replace(/-/g, '_')
  const lines = ['stateDiagram-v2']
  for (const key of Object.keys(machine.root.states)) if (key !== id(key)) lines.push(`  state "${key}" as ${id(key)}`)
  lines.push(`  [*] --> ${id(machine.root.initial?.target?.[0]?.key ?? 'idle')}`)
  for (const node of Object.values(machine.root.states)) {
    for (const [event, definitions] of node.transitions) {
      for (const definition of definitions) {
        const guard = guardName(definition.guard)
        for (const target of definition.target ?? [node]) {
          // The event as the transition log stores it: one name per event in logs, CLI and docs.
          lines.push(`  ${id(node.key)} --> ${id(target.key)}: ${event}${guard ? ` [${guard}]` : ''}`)
        }
      }
    }
  }
  for (const node of Object.values(machine.root.states)) {
    if (node.type === 'final') lines.push(`  ${id(node.key)} --> [*]`)
  }
  const rootEvents = [...machine.root.transitions].flatMap(([event, definitions]) =>
    definitions.flatMap((d) => (d.target ?? []).map((t) => `${event} → ${t.key}`)),
  )
  if (rootEvents.length) lines.push(`  note right of idle: from any state: ${rootEvents.join(', ')}`)
  return lines.join('\n')
}
