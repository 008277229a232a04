/**
 * Replay: the turn's state sequence rebuilt from its transition log with the chart's pure
 * `transition()`. Recovery uses it to restore the chart's context; `engine.replay` returns it.
 */
import { initialTransition, transition, type SnapshotFrom } from 'xstate'
import { gateState, stepStreamState, turnMachine, turnStateName, type TurnMachine } from '../../machines/turn.machine'
import type { TurnEvent, TurnInput } from '../../machines/turn.types'
import { ReplayMismatchError, type SerializedError } from '../core/errors'

export { ReplayMismatchError }
import type { TransitionRecord } from '../core/types'

export interface ReplayStep {
  seq: number
  /** The state the machine reached. */
  state: string
  event: string
  time: number
  /** Ids of the parts written with this transition (since the previous one). */
  parts: string[]
}

/** What `replayTransitions` tells an observer of each row: the snapshot it left and the event it took. */
export type ReplayObserver = (row: TransitionRecord, before: SnapshotFrom<TurnMachine>, event: TurnEvent) => void

/**
 * Replays `rows` (in seq order) from the chart's initial state for `input`. A row's `from` and
 * `to` are stored state names (`turnStateName`: the active leaf). Throws
 * `ReplayMismatchError` at the first row whose `from`, `to` or `seq` the chart disagrees with.
 * `observe` sees each row with the snapshot before it and the event the chart took (the viewer
 * asks the chart which of its edges that was).
 *
 * @example
 * const { steps, snapshot } = replayTransitions(input, await store.transitions.list(turnId))
 */
export function replayTransitions(
  input: TurnInput,
  rows: TransitionRecord[],
  machine: TurnMachine = turnMachine,
  observe?: ReplayObserver,
): { steps: ReplayStep[]; snapshot: SnapshotFrom<TurnMachine> } {
  let [snapshot] = initialTransition(machine, input)
  const steps: ReplayStep[] = []
  let expectedSeq = 1
  for (const row of rows) {
    const current = turnStateName(snapshot)
    const mismatch = (expected: string, logged: string, detail: string) =>
      new ReplayMismatchError({ turnId: row.turnId, seq: row.seq, expected, logged, detail })
    if (row.seq !== expectedSeq) throw mismatch(String(expectedSeq), String(row.seq), `expected seq ${expectedSeq}, found ${row.seq}`)
    if (row.from !== current) throw mismatch(current, row.from, `the chart is in '${current}', the row says it left '${row.from}'`)
    if (snapshot.status !== 'active') throw mismatch(current, row.event, `the turn had already ended in '${current}'`)
    const event = chartEvent(row)
    observe?.(row, snapshot, event)
    const next = passGate(machine, transition(machine, snapshot, event)[0], row)
    const reached = row.event === 'xstate.stop' ? 'aborted' : turnStateName(next)
    if (reached !== row.to) throw mismatch(reached, row.to, `'${row.event}' from '${current}' leads to '${reached}', the row says '${row.to}'`)
    if (row.event !== 'xstate.stop') snapshot = next
    else snapshot = machine.resolveState({ value: 'aborted', context: { ...snapshot.context, outcome: 'aborted' } })
    steps.push({ seq: row.seq, state: row.to, event: row.event, time: row.time, parts: row.parts ?? [] })
    expectedSeq++
  }
  return { steps, snapshot }
}

/**
 * Rows written before the step gate existed (turnchart up to 0.3) went from a step's end, a
 * compaction, the start or a restart straight to `streaming` (or, `stopWhen` holding, from
 * `tool-running` to `completed`); the chart now passes the gate there. Its verdict is the one
 * the row's target says.
 */
function passGate(machine: TurnMachine, snapshot: SnapshotFrom<TurnMachine>, row: TransitionRecord): SnapshotFrom<TurnMachine> {
  if (turnStateName(snapshot) !== gateState || row.to === gateState) return snapshot
  if (row.to === stepStreamState) return transition(machine, snapshot, { type: 'gate.continue' })[0]
  if (row.to === 'completed') return transition(machine, snapshot, { type: 'gate.complete', rule: 'stopWhen' })[0]
  return snapshot
}

/**
 * A logged row as the event the chart takes now. Rows written by turnchart 0.1 name two
 * events differently and carry two decisions the chart then kept in its context; their
 * target state says which way they went, so they replay to the same states:
 * - `xstate.done.actor.runTools` is `tools.finished` (`overflow` when it led to a compaction,
 *   or to `failed` because that compaction was refused);
 * - `xstate.error.actor.runTools` is `turn.fail` (the tools' defect failed the turn);
 * - `compaction.finished` without `completes` completed the turn when it led to `completed`;
 * - `turn.recover` without `restartStep` restarted the step when it led to `streaming`.
 */
function chartEvent(row: TransitionRecord): TurnEvent {
  const payload = row.payload
  switch (row.event) {
    case 'xstate.done.actor.runTools':
      return { type: 'tools.finished', overflow: row.to !== stepStreamState }
    case 'xstate.error.actor.runTools':
      return { type: 'turn.fail', error: payload.error as SerializedError }
    case 'compaction.finished':
      return { type: 'compaction.finished', completes: typeof payload.completes === 'boolean' ? payload.completes : row.to === 'completed' }
    case 'turn.recover':
      return { ...payload, type: 'turn.recover', retryDelayMs: Number(payload.retryDelayMs ?? 0), ...(payload.restartStep === undefined && row.to === stepStreamState ? { restartStep: true } : {}) } as TurnEvent
    default:
      return { ...payload, type: row.event } as TurnEvent
  }
}
