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
import type { ChildTurnRunner } from '../tools/child-turns'
import { gatedActor, type WriteAheadGate } from './gated-actor'
import type { RunTree } from './run-tree/run-tree'
import { stepBoundary } from './step-boundary'
import type { TurnScope } from './turn-scope'

/** What a turn's actors work with: its scope, its run tree (the budget) and its child turn runner. */
export interface TurnRun {
  scope: TurnScope
  tree: RunTree
  children?: ChildTurnRunner
}

/** The turn each actor system runs (one root actor, so one system, per turn). */
const turns = new WeakMap<object, { gate: WriteAheadGate; turn: TurnRun }>()

/**
 * Ties a turn's actor to its scope, run tree and write-ahead gate: the chart's actors, made
 * once, find their turn through the actor system they run in. Call it before the actor starts.
 *
 * @example
 * const actor = createActor(turnChart, { input }); bindTurn(actor, { scope, tree }, recorder); actor.start()
 */
export function bindTurn(actor: { system: object }, run: TurnRun, gate: WriteAheadGate): void {
  turns.set(actor.system, { gate, turn: run })
}

function turnOf(system: object): { gate: WriteAheadGate; turn: TurnRun } {
  const bound = turns.get(system)
  if (!bound) throw new Error('a turn actor started in an actor system bound to no turn (bindTurn)')
  return bound
}

const actors = {
  streamStep: gatedActor<StreamStepInput, TurnRun>(turnOf, {
    run: async ({ scope, tree }, input, signal, emit) => {
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
  runTools: gatedActor<RunToolsInput, TurnRun>(turnOf, {
    run: async ({ scope, children }, input, signal) => {
      await runTools(scope, signal, children)
      return stepBoundary(scope, input.step)
    },
    // A tool's own throw is its part; only a defect of the runner gets here: the turn fails.
    failure: (error): TurnEvent => ({ type: 'turn.fail', error: failureOf('running the tools', error) }),
  }),
  compact: gatedActor<CompactInput, TurnRun>(turnOf, {
    // Whether the summary follows a final answer is read before the summary replaces the history.
    run: async ({ scope, tree }, input, signal) => {
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

/**
 * The turn chart with its actors, built once: `provide` builds the whole chart again (~0.3 ms,
 * on the way from `prompt()` to the model call), so a turn gets this one and `bindTurn`.
 *
 * @example
 * const actor = createActor(turnChart, { input }); bindTurn(actor, { scope, tree }, recorder)
 */
export const turnChart = turnMachine.provide({ actors })

/** A defect's record: turnchart's own errors as they are, anything else named for what failed. */
function failureOf(operation: string, error: unknown) {
  if (StorageError.isInstance(error)) return error.toJSON()
  const record = serializeError(error)
  return record.name === 'UnknownError' ? new UnknownError(`${operation} failed: ${record.message}`).toJSON() : record
}
