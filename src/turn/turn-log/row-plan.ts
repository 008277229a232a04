/**
 * The row planner: what a turn's next transitions write, decided by a pure function of those
 * transitions and the turn's facts (where its log stands, the time, the parts touched, the
 * deadline of what it waits on, the final error). No store here: the turn log and recovery plan
 * with it, and the committer (log-rows.ts `writePlan`) writes what was planned, in the caller's
 * transaction. Parts and a run tree's spending are written in the same transaction by their
 * owners (the part writer, the rider); the plan names the parts its last row touched.
 */
import { crashedState, isFinalState, retryWaitStates, waitOf } from '../../../machines/turn.machine'
import { serializeError, type SerializedError } from '../../core/errors'
import type { TransitionRecord, TurnOutcome } from '../../core/types'
import type { TurnUpdate } from '../../store/store'

/** One transition of the chart to log: its event, the state it led to, the chart's context there (control data). */
export interface LoggedTransition {
  event: { type: string }
  to: string
  context: { step: number; attempt: number; retryDelayMs: number }
}

/** What the planner knows of the turn besides its transitions. */
export interface RowFacts {
  turnId: string
  /** The last committed row: the planned rows follow it (its state is the first row's `from`). */
  after: { state: string; seq: number }
  time: number
  /** Ids of the parts changed since the last row, written in the same transaction: the last row names them. */
  parts?: readonly string[]
  /** The earliest deadline of what the turn waits on (an approval's expiry, a deferred call's deadline): a row into a waiting state stores it. */
  waitDeadline?: number | null
  /** The deadline the turn row holds now: a row into `interrupted` keeps it (the resumed wait ends there). */
  storedDeadline?: number | null
  /** The final row's error (a completed turn: none). */
  error?: SerializedError | null
  /** Applied to each event's payload: control data, but a step's error rides in it, and no credential goes into the log. */
  redact?: (payload: Record<string, unknown>) => Record<string, unknown>
}

/** What a transaction writes of the turn's progress: its log rows, then its row (the last row's state). */
export interface RowPlan {
  turnId: string
  rows: TransitionRecord[]
  turn: TurnUpdate
  /** When the turn row changed (the rows' time). */
  time: number
}

/**
 * Plans the rows of `transitions` (at least one), numbered after `facts.after`.
 *
 * @example
 * planRows({ turnId, after: { state: 'streaming', seq: 3 }, time }, [{ event: { type: 'step.failed', … }, to: 'retry-waiting', context }])
 * // { rows: [{ seq: 4, from: 'streaming', to: 'retry-waiting', … }], turn: { state: 'retry-waiting', retryAt: time + delay, … } }
 */
export function planRows(facts: RowFacts, transitions: readonly LoggedTransition[]): RowPlan {
  const last = transitions.at(-1)
  if (!last) throw new Error('planRows: no transition to plan')
  const parts = facts.parts ?? []
  let { state: from, seq } = facts.after
  const rows = transitions.map(({ event, to }, i): TransitionRecord => {
    const row: TransitionRecord = {
      turnId: facts.turnId,
      seq: ++seq,
      from,
      event: event.type,
      to,
      payload: (facts.redact ?? ((payload) => payload))(eventPayload(event)),
      time: facts.time,
      ...(parts.length && i === transitions.length - 1 ? { parts: [...parts] } : {}),
    }
    from = to
    return row
  })
  const final = isFinalState(last.to)
  const turn: TurnUpdate = {
    state: last.to,
    outcome: final ? (last.to as TurnOutcome) : null,
    step: last.context.step,
    attempt: last.context.attempt,
    retryAt: deadlineOf(last.to, facts, last.context.retryDelayMs),
    error: final ? (facts.error ?? null) : null,
  }
  return { turnId: facts.turnId, rows, turn, time: facts.time }
}

/**
 * The turn's row only, failed, with no log row: a turn whose log cannot be replayed (a gap, a
 * hand-edited row) ends so; a row after a gap would claim a path the chart never took.
 */
export function planUnreplayable(turn: { id: string; step: number; attempt: number }, error: SerializedError, time: number): RowPlan {
  return { turnId: turn.id, rows: [], turn: { state: 'failed', outcome: 'failed', step: turn.step, attempt: turn.attempt, retryAt: null, error }, time }
}

/**
 * The deadline a row into `to` stores (the turn row's `retry_at`): in a retry wait its time plus
 * the chart's delay; in a waiting state the earliest deadline of what it waits on, which
 * whichever engine sweeps settles (src/engine/deadline-sweep.ts); in `interrupted` the one it
 * held; else none.
 */
function deadlineOf(to: string, facts: RowFacts, retryDelayMs: number): number | null {
  if (retryWaitStates.has(to)) return facts.time + retryDelayMs
  if (waitOf(to)) return facts.waitDeadline ?? null
  if (to === crashedState) return facts.storedDeadline ?? null
  return null
}

/** The event's payload without its type; errors serialised (control data only). */
function eventPayload(event: { type: string }): Record<string, unknown> {
  const { type: _type, ...rest } = event as Record<string, unknown>
  if ('error' in rest && rest.error instanceof Error) rest.error = serializeError(rest.error)
  if ('output' in rest && rest.output === undefined) delete rest.output
  return rest
}
