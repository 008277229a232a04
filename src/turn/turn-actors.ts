/**
 * The turn chart's four actors, each in the gated wrapper (gated-actor.ts): the step gate (its
 * rules, between two model calls), the step (one model call), the tools, the compaction. Each
 * one's failure event is the chart's failure edge for its state. Made once; each finds its
 * turn by its actor system.
 */
import { turnMachine, type CompactInput, type RunToolsInput, type StepGateInput, type StreamStepInput } from '../../machines/turn.machine'
import type { TurnEvent } from '../../machines/turn.types'
import { serializeError, StorageError, UnknownError } from '../core/errors'
import { summarize } from '../compaction/summarize'
import { streamStep } from '../llm/stream-step'
import { runTools } from '../tools/run-tools'
import type { ChildTurnRunner } from '../tools/child-turns'
import { gatedActor, type WriteAheadGate } from './gated-actor'
import type { RunTree } from './run-tree/run-tree'
import { decideStep, type GateTurn } from '../policy/step-gate'
import { isUsageOverflow } from '../policy/overflow'
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

/** The step gate acts on nothing the log must precede (effect-free): it waits for no commit. */
const noCommitNeeded = { committed: async () => true }

/** The turn as the step gate's rules read it. */
function gateTurn({ scope, tree }: TurnRun, input: StepGateInput): GateTurn {
  return {
    stepNumber: input.step,
    maxSteps: input.maxSteps,
    stopWhen: scope.config.stopWhen,
    rules: scope.config.stepRules,
    steps: () => scope.stepResults(input.step),
    takeSteered: async () => (await scope.takeSteered()).length,
    admit: () => tree.admit(scope.turnId),
  }
}

const actors = {
  stepGate: gatedActor<StepGateInput, TurnRun>((system) => ({ gate: noCommitNeeded, turn: turnOf(system).turn }), {
    run: (turn, input) => decideStep(gateTurn(turn, input)),
    // A rule that throws (a stopWhen condition, an app's rule) fails the turn, naming it.
    failure: (error): TurnEvent => ({ type: 'turn.fail', error: failureOf('the step gate', error) }),
  }),
  streamStep: gatedActor<StreamStepInput, TurnRun>(turnOf, {
    run: async ({ scope, tree }, input, signal) => {
      // (the step gate admitted the step; its retries are model calls the budget counts too)
      if (input.attempt > 1) tree.called()
      const event = await streamStep(scope, input, signal)
      if (event.type === 'step.finished') tree.spend(scope.lastStepFinish())
      return event
    },
    // A defect, not the provider's answer: the step fails, without a retry.
    failure: (error): TurnEvent => ({ type: 'step.failed', error: serializeError(error), overflow: false, retryDelayMs: null }),
  }),
  runTools: gatedActor<RunToolsInput, TurnRun>(turnOf, {
    run: async ({ scope, children }, _input, signal) => {
      await runTools(scope, signal, children)
      // The step's usage judged again by the rule the step applied: a full context is compacted before the gate.
      const finish = scope.lastStepFinish()
      const { limits, compaction } = scope.config
      return { type: 'tools.finished', overflow: limits !== undefined && finish !== undefined && isUsageOverflow(finish.tokens, limits, compaction.reserved) }
    },
    // A tool's own throw is its part; only a defect of the runner gets here: the turn fails.
    failure: (error): TurnEvent => ({ type: 'turn.fail', error: failureOf('running the tools', error) }),
  }),
  compact: gatedActor<CompactInput, TurnRun>(turnOf, {
    // Whether the summary follows a final answer is read before the summary replaces the history.
    run: async ({ scope, tree }, input, signal) => {
      // A summary is a model call the budget counts; the next step gate checks it.
      tree.called()
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
