/**
 * The one wrapper every actor of the turn chart runs in. It gives the three guarantees the
 * chart relies on, in one place:
 *
 * 1. **Write-ahead**: nothing is called before the row of the transition that entered the
 *    state is committed. When it never is (the write failed, the turn was lost or detached),
 *    the actor does nothing; the turn ends through `turn.fail` or a stop.
 * 2. **Abort first**: the state may be left while the row commits (an abort, a stop). The
 *    exit is checked after the gate and before the work starts: an aborted step never calls
 *    the provider.
 * 3. **Never rejects**: whatever the work throws (a defect, a hook that throws before its own
 *    `try`) becomes the actor's failure event, which the chart's failure edges take.
 *
 * The work gets the state's exit (left with `MessageAbortedError` when the chart leaves the
 * state) and resolves with the one event the chart decides on.
 */
import { fromCallback, type CallbackActorLogic } from 'xstate'
import type { TurnEvent } from '../../machines/turn.types'
import { MessageAbortedError } from '../core/errors'
import { StateExit } from '../core/state-exit'

/** The commit the actors wait for: true when the turn may act, false when it must not. */
export interface WriteAheadGate {
  committed(): Promise<boolean>
}

export interface ActorWork<I, T> {
  /**
   * Does the state's work for `turn`; resolves with the event to send. May throw. `emit` sends
   * an event while the work goes on (one the state takes without leaving it, such as `turn.steered`).
   */
  run(turn: T, input: I, exit: StateExit, emit: (event: TurnEvent) => void): Promise<TurnEvent>
  /** The event a throw of `run` becomes: the failure edge of the actor's state. */
  failure(error: unknown, input: I): TurnEvent
}

/** What an actor acts for: its turn's write-ahead gate and the part of the turn its work uses. */
export interface BoundTurn<T> {
  gate: WriteAheadGate
  turn: T
}

/**
 * The actor's logic, made once per engine (turn-actors.ts `EngineChart`): `bound` finds the turn
 * the invocation's `input` names (`input.turnId`) among the turns the engine runs; undefined
 * when it runs none of that id (a defect: the invocation fails without acting).
 *
 * @example
 * const streamStep = gatedActor((input) => turns.get(input.turnId)?.streamStep, { run: streamStep, failure: (e) => stepFailed(e) })
 */
export function gatedActor<I extends { turnId: string }, T>(bound: (input: I) => BoundTurn<T> | undefined, work: ActorWork<I, T>): CallbackActorLogic<TurnEvent, I> {
  return fromCallback<TurnEvent, I>(({ input, sendBack }) => {
    const found = bound(input)
    const exit = new StateExit()
    let settled = false
    void (async () => {
      let event: TurnEvent
      try {
        if (!found) throw new Error(`no turn '${input.turnId}' runs in this engine: its actor has nothing to act for`)
        if (!(await found.gate.committed())) return
        if (exit.left) return
        event = await work.run(found.turn, input, exit, (early) => {
          if (!exit.left) sendBack(early)
        })
      } catch (error) {
        event = work.failure(error, input)
      }
      settled = true
      // The chart left the state meanwhile: its event is not read.
      if (!exit.left) sendBack(event)
    })()
    // Work that settled has nothing left to stop: its state is left by its own event, and the
    // error (a stack captured) is not made for nothing, twice a step.
    return () => {
      if (!settled) exit.leave(new MessageAbortedError())
    }
  })
}
