/**
 * Replay: the turn's state sequence rebuilt from its transition log with the chart's pure
 * `transition()`. Recovery uses it to restore the chart's context; `engine.replay` returns it.
 */
import { initialTransition, transition, type SnapshotFrom } from 'xstate'
import { turnMachine, turnStateName, type TurnMachine } from '../../machines/turn.machine'
import type { TurnEvent, TurnInput } from '../../machines/turn.types'
import { ReplayMismatchError } from '../core/errors'

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

/**
 * Replays `rows` (in seq order) from the chart's initial state for `input`. A row's `from` and
 * `to` are stored state names (`turnStateName`: the active leaf). Throws
 * `ReplayMismatchError` at the first row whose `from`, `to` or `seq` the chart disagrees with.
 *
 * @example
 * const { steps, snapshot } = replayTransitions(input, await store.transitions.list(turnId))
 */
export function replayTransitions(
  input: TurnInput,
  rows: TransitionRecord[],
  machine: TurnMachine = turnMachine,
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
    const event = { ...row.payload, type: row.event } as TurnEvent
    const [next] = transition(machine, snapshot, event)
    const reached = row.event === 'xstate.stop' ? 'aborted' : turnStateName(next)
    if (reached !== row.to) throw mismatch(reached, row.to, `'${row.event}' from '${current}' leads to '${reached}', the row says '${row.to}'`)
    if (row.event !== 'xstate.stop') snapshot = next
    else snapshot = machine.resolveState({ value: 'aborted', context: { ...snapshot.context, outcome: 'aborted' } })
    steps.push({ seq: row.seq, state: row.to, event: row.event, time: row.time, parts: row.parts ?? [] })
    expectedSeq++
  }
  return { steps, snapshot }
}
