/**
 * The one wrapper every actor of the turn chart runs in. It gives the three guarantees the
 * chart relies on, in one place:
 *
 * 1. **Write-ahead**: nothing is called before the row of the transition that entered the
 *    state is committed. When it never is (the write failed, the turn was lost or detached),
 *    the actor does nothing; the turn ends through `turn.fail` or a stop.
 * 2. **Abort first**: the state may be left while the row commits (an abort, a stop). The
 *    signal is checked after the gate and before the work starts: an aborted step never calls
 *    the provider.
 * 3. **Never rejects**: whatever the work throws (a defect, a hook that throws before its own
 *    `try`) becomes the actor's failure event, which the chart's failure edges take.
 *
 * The work gets the state's abort signal (aborted with `MessageAbortedError` when the chart
 * leaves the state) and resolves with the one event the chart decides on.
 */
import { fromCallback, type CallbackActorLogic } from 'xstate'
import type { TurnEvent } from '../../machines/turn.types'
import { MessageAbortedError } from '../core/errors'

/** The commit the actors wait for: true when the turn may act, false when it must not. */
export interface WriteAheadGate {
  committed(): Promise<boolean>
}

export interface ActorWork<I, T> {
  /**
   * Does the state's work for `turn`; resolves with the event to send. May throw. `emit` sends
   * an event while the work goes on (one the state takes without leaving it, such as `turn.steered`).
   */
  run(turn: T, input: I, signal: AbortSignal, emit: (event: TurnEvent) => void): Promise<TurnEvent>
  /** The event a throw of `run` becomes: the failure edge of the actor's state. */
  failure(error: unknown, input: I): TurnEvent
}

/**
 * The actor's logic, made for one turn (turn-actors.ts `turnChart`): `bound` is the turn it runs
 * for (its write-ahead gate and its data); each invocation gets its `input` from the chart.
 *
 * @example
 * const streamStep = gatedActor({ gate: log, turn: { scope, tree } }, { run: streamStep, failure: (e) => stepFailed(e) })
 */
export function gatedActor<I, T>(bound: { gate: WriteAheadGate; turn: T }, work: ActorWork<I, T>): CallbackActorLogic<TurnEvent, I> {
  return fromCallback<TurnEvent, I>(({ input, sendBack }) => {
    const { gate, turn } = bound
    const controller = new AbortController()
    let settled = false
    void (async () => {
      let event: TurnEvent
      try {
        if (!(await gate.committed())) return
        if (controller.signal.aborted) return
        event = await work.run(turn, input, controller.signal, (early) => {
          if (!controller.signal.aborted) sendBack(early)
        })
      } catch (error) {
        event = work.failure(error, input)
      }
      settled = true
      // The chart left the state meanwhile: its event is not read.
      if (!controller.signal.aborted) sendBack(event)
    })()
    // Work that settled has nothing left to stop: its state is left by its own event, and the
    // error (a stack captured) is not made for nothing, twice a step.
    return () => {
      if (!settled) controller.abort(new MessageAbortedError())
    }
  })
}
