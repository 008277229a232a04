/**
 * A turn's path through the drawn chart: each logged transition with the drawn edges it took.
 * The log is replayed through the chart so that the chart itself says which of two edges
 * alike but for their guards a row took (`streaming --step.finished--> failed` is the step
 * limit or a refused overflow); a log the chart disagrees with is still drawn, each row on the
 * first edge between its two states.
 */
import type { TurnInput } from '../../machines/turn.types'
import { turnMachine, waitOf, workOf } from '../../machines/turn.machine'
import { edgesTaken } from '../chart/chart-graph'
import { stallOf } from '../chart/readable-event'
import type { TransitionRecord } from '../core/types'
import { replayTransitions } from '../turn/replay'
import type { PathStep, StateMeaning } from './wire'

/**
 * The rows with their edges, and why the log could not be replayed when it could not (its
 * later rows are then drawn on the first edge that fits).
 *
 * @example
 * turnPath(input, transitions).steps.map((s) => `${s.seq}: ${s.edges.join(' then ')}`)
 */
export function turnPath(input: TurnInput | undefined, transitions: TransitionRecord[]): { steps: PathStep[]; mismatch?: string } {
  const selected = new Map<number, readonly unknown[]>()
  let mismatch: string | undefined
  if (input) {
    try {
      replayTransitions(input, transitions, turnMachine, (row, before, event) => selected.set(row.seq, turnMachine.getTransitionData(before, event)))
    } catch (error) {
      mismatch = error instanceof Error ? error.message : String(error)
    }
  }
  const steps = transitions.map((row) => {
    const stalled = stallOf(row)
    return {
      seq: row.seq,
      from: row.from,
      to: row.to,
      event: row.event,
      time: row.time,
      edges: edgesTaken(row, selected.get(row.seq)),
      ...(row.storageWaits ? { storageWaits: row.storageWaits } : {}),
      ...(stalled ? { stalled } : {}),
      ...meaningOf(row.to),
      ...noteOf(row),
    }
  })
  return mismatch === undefined ? { steps } : { steps, mismatch }
}

/** What the chart says of a state: the work it bounds, or the wait it is. */
function meaningOf(state: string): { into?: StateMeaning } {
  const wait = waitOf(state)
  if (wait) return { into: { kind: 'wait', label: wait.label } }
  const work = workOf(state)
  // (the step gate only reads and writes the database: no work of the turn's own to show)
  return work && work.boundBy !== 'storage' ? { into: { kind: 'work', bound: work.boundBy, label: work.label } } : {}
}

/** A fallback (`model.fallback`'s row), or the error an attempt failed with. */
function noteOf(row: TransitionRecord): { note?: string } {
  const { fallback, error } = row.payload as { fallback?: { from: string; to: string }; error?: { name?: string; message?: string } }
  if (fallback) return { note: `fell back from ${fallback.from} to ${fallback.to}` }
  if (row.event.endsWith('.failed') && error?.name) return { note: `${error.name}${error.message ? `: ${error.message.slice(0, 120)}` : ''}` }
  return {}
}
