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
import type { ChildTurnRunner } from '../tools/child-turns'
import { gatedActor, type WriteAheadGate } from './gated-actor'
import type { RunTree } from './run-tree/run-tree'
import { stepBoundary } from './step-boundary'
import type { TurnScope } from './turn-scope'

/**
 * @example
 * const machine = turnMachine.provide({ actors: turnActors(scope, recorder) })
 */
export function turnActors(scope: TurnScope, gate: WriteAheadGate, run: { tree: RunTree; children?: ChildTurnRunner }) {
  const { tree } = run
  return {
    streamStep: gatedActor<StreamStepInput>(gate, {
      run: async (input, signal, emit) => {
        // Messages steered into the turn join its history before this model call.
        const steered = await scope.takeSteered()
        if (steered.length > 0) emit({ type: 'turn.steered', messages: steered.length })
        if (signal.aborted) return { type: 'step.failed', error: serializeError(signal.reason), overflow: false, retryDelayMs: null }
        // The run tree's budget, checked before the call: past it, no call is made and the turn fails.
        const refused = await tree.admit(scope.turnId)
        if (refused) return { type: 'turn.fail', error: refused.toJSON() }
        const event = await streamStep(scope, input, signal)
        if (event.type === 'step.finished') tree.spend(scope.lastStepFinish())
        return event
      },
      // A defect, not the provider's answer: the step fails, without a retry.
      failure: (error): TurnEvent => ({ type: 'step.failed', error: serializeError(error), overflow: false, retryDelayMs: null }),
    }),
    runTools: gatedActor<RunToolsInput>(gate, {
      run: async (input, signal) => {
        await runTools(scope, signal, run.children)
        return stepBoundary(scope, input.step)
      },
      // A tool's own throw is its part; only a defect of the runner gets here: the turn fails.
      failure: (error): TurnEvent => ({ type: 'turn.fail', error: failureOf('running the tools', error) }),
    }),
    compact: gatedActor<CompactInput>(gate, {
      // Whether the summary follows a final answer is read before the summary replaces the history.
      run: async (input, signal) => {
        const refused = await tree.admit(scope.turnId)
        if (refused) return { type: 'turn.fail', error: refused.toJSON() }
        const event = await summarize(scope, { ...input, completes: scope.lastStepAnswered() }, signal)
        const summary = scope.messages.at(-1)?.info
        if (event.type === 'compaction.finished' && summary?.summary && summary.tokens) tree.spend({ tokens: summary.tokens, cost: summary.cost ?? 0 })
        return event
      },
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
