/**
 * The turn chart's three actors, each in the gated wrapper (gated-actor.ts): the step (one
 * model call), the tools (then the step boundary), the compaction. Each one's failure event
 * is the chart's failure edge for its state.
 */
import type { CompactInput, RunToolsInput, StreamStepInput } from '../../machines/turn.machine'
import type { TurnEvent } from '../../machines/turn.types'
import { serializeError, StorageError, UnknownError } from '../core/errors'
import { summarize } from '../compaction/summarize'
import { streamStep } from '../llm/stream-step'
import { runTools } from '../tools/run-tools'
import { gatedActor, type WriteAheadGate } from './gated-actor'
import { stepBoundary } from './step-boundary'
import type { TurnScope } from './turn-scope'

/**
 * @example
 * const machine = turnMachine.provide({ actors: turnActors(scope, recorder) })
 */
export function turnActors(scope: TurnScope, gate: WriteAheadGate) {
  return {
    streamStep: gatedActor<StreamStepInput>(gate, {
      run: (input, signal) => streamStep(scope, input, signal),
      // A defect, not the provider's answer: the step fails, without a retry.
      failure: (error): TurnEvent => ({ type: 'step.failed', error: serializeError(error), overflow: false, retryDelayMs: null }),
    }),
    runTools: gatedActor<RunToolsInput>(gate, {
      run: async (input, signal) => {
        await runTools(scope, signal)
        return stepBoundary(scope, input.step)
      },
      // A tool's own throw is its part; only a defect of the runner gets here: the turn fails.
      failure: (error): TurnEvent => ({ type: 'turn.fail', error: failureOf('running the tools', error) }),
    }),
    compact: gatedActor<CompactInput>(gate, {
      // Whether the summary follows a final answer is read before the summary replaces the history.
      run: (input, signal) => summarize(scope, { ...input, completes: scope.lastStepAnswered() }, signal),
      failure: (error): TurnEvent => ({ type: 'compaction.failed', error: serializeError(error), retryDelayMs: null }),
    }),
  }
}

/** A defect's record: turnchart's own errors as they are, anything else named for what failed. */
function failureOf(operation: string, error: unknown) {
  if (StorageError.isInstance(error)) return error.toJSON()
  const record = serializeError(error)
  return record.name === 'UnknownError' ? new UnknownError(`${operation} failed: ${record.message}`).toJSON() : record
}
