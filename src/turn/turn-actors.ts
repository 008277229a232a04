/**
 * The turn chart's three actors, each in the gated wrapper (gated-actor.ts): the step (one
 * model call), the tools (then the step boundary), the compaction. Each one's failure event
 * is the chart's failure edge for its state. Made once; each finds its turn by its actor system.
 */
import { turnMachine, type CompactInput, type RunToolsInput, type StreamStepInput } from '../../machines/turn.machine'
import type { TurnEvent } from '../../machines/turn.types'
import { serializeError, StorageError, UnknownError } from '../core/errors'
import { summarize } from '../compaction/summarize'
import { streamStep } from '../llm/stream-step'
import { runTools } from '../tools/run-tools'
import { gatedActor, type WriteAheadGate } from './gated-actor'
import { stepBoundary } from './step-boundary'
import type { TurnScope } from './turn-scope'

/** The turn each actor system runs (one root actor, so one system, per turn). */
const turns = new WeakMap<object, { gate: WriteAheadGate; turn: TurnScope }>()

/**
 * Ties a turn's actor to its scope and write-ahead gate: the chart's actors, made once, find
 * their turn through the actor system they run in. Call it before the actor starts.
 *
 * @example
 * const actor = createActor(turnChart, { input }); bindTurn(actor, scope, recorder); actor.start()
 */
export function bindTurn(actor: { system: object }, scope: TurnScope, gate: WriteAheadGate): void {
  turns.set(actor.system, { gate, turn: scope })
}

function turnOf(system: object): { gate: WriteAheadGate; turn: TurnScope } {
  const bound = turns.get(system)
  if (!bound) throw new Error('a turn actor started in an actor system bound to no turn (bindTurn)')
  return bound
}

const actors = {
  streamStep: gatedActor<StreamStepInput, TurnScope>(turnOf, {
    run: async (scope, input, signal, emit) => {
      // Messages steered into the turn join its history before this model call.
      const steered = await scope.takeSteered()
      if (steered.length > 0) emit({ type: 'turn.steered', messages: steered.length })
      if (signal.aborted) return { type: 'step.failed', error: serializeError(signal.reason), overflow: false, retryDelayMs: null }
      return streamStep(scope, input, signal)
    },
    // A defect, not the provider's answer: the step fails, without a retry.
    failure: (error): TurnEvent => ({ type: 'step.failed', error: serializeError(error), overflow: false, retryDelayMs: null }),
  }),
  runTools: gatedActor<RunToolsInput, TurnScope>(turnOf, {
    run: async (scope, input, signal) => {
      await runTools(scope, signal)
      return stepBoundary(scope, input.step)
    },
    // A tool's own throw is its part; only a defect of the runner gets here: the turn fails.
    failure: (error): TurnEvent => ({ type: 'turn.fail', error: failureOf('running the tools', error) }),
  }),
  compact: gatedActor<CompactInput, TurnScope>(turnOf, {
    // Whether the summary follows a final answer is read before the summary replaces the history.
    run: (scope, input, signal) => summarize(scope, { ...input, completes: scope.lastStepAnswered() }, signal),
    failure: (error): TurnEvent => ({ type: 'compaction.failed', error: serializeError(error), retryDelayMs: null }),
  }),
}

/**
 * The turn chart with its actors, built once: `provide` builds the whole chart again (~0.3 ms,
 * on the way from `prompt()` to the model call), so a turn gets this one and `bindTurn`.
 *
 * @example
 * const actor = createActor(turnChart, { input }); bindTurn(actor, scope, recorder)
 */
export const turnChart = turnMachine.provide({ actors })

/** A defect's record: turnchart's own errors as they are, anything else named for what failed. */
function failureOf(operation: string, error: unknown) {
  if (StorageError.isInstance(error)) return error.toJSON()
  const record = serializeError(error)
  return record.name === 'UnknownError' ? new UnknownError(`${operation} failed: ${record.message}`).toJSON() : record
}
