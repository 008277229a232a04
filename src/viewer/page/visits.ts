/**
 * A turn's visits to the chart's states, from its logged path: when the turn entered each
 * state (by which numbered transition) and how long it stayed. A transition that leaves a
 * state for itself (an approval decided while others wait) does not leave it: the visit goes on.
 */
import type { TurnView } from '../wire'

export interface Visit {
  state: string
  /** The number of the transition that entered the state; 0 for the turn's start in `idle`. */
  seq: number
  start: number
  /** When the turn left; null while it is still there (a running turn's current state). */
  end: number | null
  /** A final state: the turn ended there, it has no duration. */
  final: boolean
}

/**
 * @example
 * visitsOf(turn).filter((v) => v.state === 'streaming').map((v) => v.seq) // [1, 3, 5]
 */
export function visitsOf(turn: Pick<TurnView, 'path' | 'outcome' | 'time'>): Visit[] {
  const visits: Visit[] = [{ state: 'idle', seq: 0, start: turn.time.created, end: null, final: false }]
  for (const step of turn.path) {
    const current = visits[visits.length - 1]
    if (step.from === step.to && current.state === step.to) continue
    current.end = step.time
    visits.push({ state: step.to, seq: step.seq, start: step.time, end: null, final: false })
  }
  const last = visits[visits.length - 1]
  if (turn.outcome !== null && turn.path.length > 0) {
    last.end = last.start
    last.final = true
  }
  return visits
}

/** The visits of each state, in order. */
export function visitsByState(visits: Visit[]): Map<string, Visit[]> {
  const byState = new Map<string, Visit[]>()
  for (const visit of visits) byState.set(visit.state, [...(byState.get(visit.state) ?? []), visit])
  return byState
}
