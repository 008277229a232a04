/**
 * The turn chart's four actors, each in the gated wrapper (gated-actor.ts): the step gate (its
 * rules, between two model calls), the step (one model call), the tools, the compaction. Each
 * one's failure event is the chart's failure edge for its state. Made for each turn, over that
 * turn's scope, run tree and log (`turnChart`): what an actor gets is its logic's turn (typed as
 * the part of the scope it uses: `GateRun`, `StepRun`, `ToolsRun`, `CompactRun`) and its
 * invocation's input, nothing looked up.
 */
import { turnMachine, type TurnMachine, type CompactInput, type RunToolsInput, type StepGateInput, type StreamStepInput } from '../../machines/turn.machine'
import type { TurnEvent } from '../../machines/turn.types'
import { serializeError, StorageError, UnknownError } from '../core/errors'
import { summarize, type SummaryScope } from '../compaction/summarize'
import { streamStep, type StepRun } from '../llm/stream-step'
import { runTools, type ToolRunScope } from '../tools/run-tools'
import type { ChildTurnRunner } from '../tools/child-turns'
import { gatedActor, type WriteAheadGate } from './gated-actor'
import type { HandoffPoint } from './handoff-point'
import type { RunTree } from './run-tree/run-tree'
import { decideStep, type GateTurn } from '../policy/step-gate'
import { askAgainText, checkOutput } from '../llm/structured-output'
import { finalTextOf } from './turn-result'
import { isUsageOverflow } from '../policy/overflow'
import type { TurnScope } from './turn-scope'

/** What a turn's actors work with: its scope, its run tree (the budget) and its child turn runner. */
export interface TurnRun {
  scope: TurnScope
  tree: RunTree
  children?: ChildTurnRunner
  /** Where a handoff asked by the engine holds the turn (its next step gate). */
  handoff?: HandoffPoint
}

/**
 * What each actor gets of its turn: the part of the scope (and of the run tree) it uses, and no
 * more. The scope is one object; these types are each actor's contract with it.
 */
type GateScope = Pick<TurnScope, 'turnId' | 'config' | 'stepResults' | 'takeSteered' | 'lastStepFinish' | 'lastStepAnswered' | 'assistantMessages' | 'askAgain' | 'output'>
/** The step gate: its rules over the turn's steps, the budget it admits the next call with, a handoff it holds at. */
interface GateRun {
  scope: GateScope
  tree: Pick<RunTree, 'admit'>
  handoff?: HandoffPoint
}
/** The tools: the step's calls, the runner of child turns, the step's usage judged again for an overflow, then the step gate. */
interface ToolsRun extends GateRun {
  scope: ToolRunScope & GateScope & Pick<TurnScope, 'lastStepFinish'>
  children?: ChildTurnRunner
}
/** The compaction: the summary request over the history, a model call the budget counts. */
interface CompactRun {
  scope: SummaryScope & Pick<TurnScope, 'lastStepAnswered' | 'messages'>
  tree: Pick<RunTree, 'called' | 'spend'>
}

/** The step gate acts on nothing the log must precede (effect-free): it waits for no commit. */
const noCommitNeeded = { committed: async () => true }

/** The turn as the step gate's rules read it. */
function gateTurn({ scope, tree }: GateRun, input: StepGateInput): GateTurn {
  return {
    stepNumber: input.step,
    maxSteps: input.maxSteps,
    stopWhen: scope.config.stopWhen,
    rules: scope.config.stepRules,
    steps: () => scope.stepResults(input.step),
    takeSteered: async () => (await scope.takeSteered()).length,
    // (a turn's first gate runs in its prompt's transaction: it reads no stored spending)
    admit: () => tree.admit(scope.turnId, { readStored: input.step > 0 }),
    outputRetries: input.outputRetries,
    checkOutput: async () => {
      const { output } = scope.config
      const finish = scope.lastStepFinish()
      if (!output || !finish || !scope.lastStepAnswered()) return null
      return checkOutput(output, finalTextOf(scope.assistantMessages()), finish.reason)
    },
    askAgain: (reasons) => scope.askAgain(askAgainText(reasons)),
  }
}

/** The chart's actors over one turn: `log` is the write-ahead gate of the three that act outside the turn. */
const actorsOf = (run: TurnRun, log: WriteAheadGate) => ({
  stepGate: gatedActor<StepGateInput, GateRun>({ gate: noCommitNeeded, turn: run }, {
    run: async (turn, input) => {
      // A handoff was asked: the gate holds (nothing is in flight here) and the turn is detached.
      if (turn.handoff?.requested) return turn.handoff.hold()
      return gateVerdict(turn, input)
    },
    failure: gateFailure,
  }),
  // (the step counts its calls on the run tree itself: nothing stands between the actor and the step)
  streamStep: gatedActor<StreamStepInput, StepRun>({ gate: log, turn: { scope: run.scope, meter: run.tree } }, {
    run: streamStep,
    // A defect, not the provider's answer: the step fails, without a retry.
    failure: (error): TurnEvent => ({ type: 'step.failed', error: serializeError(error), overflow: false, retryDelayMs: null }),
  }),
  runTools: gatedActor<RunToolsInput, ToolsRun>({ gate: log, turn: run }, {
    run: runToolsThenGate,
    // A tool's own throw is its part; only a defect of the runner gets here: the turn fails.
    failure: (error): TurnEvent => ({ type: 'turn.fail', error: failureOf('running the tools', error) }),
  }),
  compact: gatedActor<CompactInput, CompactRun>({ gate: log, turn: run }, {
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
})

/**
 * The turn chart with the actors of one turn. `provide` builds the chart's nodes again for each
 * turn (0.2–0.4 ms, measured against 0.0005 ms for the chart built once and its actors found
 * through their actor system); the price of actors whose only inputs are their logic's turn and
 * their invocation's `input`.
 *
 * @example
 * const actor = createActor(turnChart({ scope, tree }, log), { input })
 */
export function turnChart(run: TurnRun, log: WriteAheadGate): TurnMachine {
  return turnMachine.provide({ actors: actorsOf(run, log) })
}

/**
 * The step's calls, then the step gate, decided here once their results are in (one transition
 * to the next step, not two): nothing outside the turn is acted on before the verdict's row, the
 * next step's, is committed. Calls that wait, an overflow (compacted before the gate) and a
 * handoff (held in `step-gate`, as the gate holds it) leave without a verdict.
 */
async function runToolsThenGate(turn: ToolsRun, input: RunToolsInput, signal: AbortSignal): Promise<TurnEvent> {
  const { scope, children } = turn
  const waiting = await runTools(scope, signal, children)
  // Calls in doubt or deferred: the turn waits for them (the others have their results).
  if (waiting.inDoubt.length > 0 || waiting.deferred.length > 0) return { type: 'tools.waiting', ...waiting }
  // The step's usage judged again by the rule the step applied: a full context is compacted before the gate.
  const finish = scope.lastStepFinish()
  const { limits, compaction } = scope.config
  const overflow = limits !== undefined && finish !== undefined && isUsageOverflow(finish.tokens, limits, compaction.reserved)
  if (overflow || turn.handoff?.requested) return { type: 'tools.finished', overflow }
  try {
    return await gateVerdict(turn, input)
  } catch (error) {
    return gateFailure(error)
  }
}

/** The step gate's verdict over the turn. */
async function gateVerdict(turn: GateRun, input: StepGateInput): Promise<TurnEvent> {
  const verdict = await decideStep(gateTurn(turn, input))
  // The parsed object is `turn.done`'s `output` (and rides in the verdict's log row).
  if (verdict.type === 'gate.complete' && verdict.rule === 'output') turn.scope.output = { value: verdict.output }
  return verdict
}

/** A rule that throws (a stopWhen condition, an app's rule) fails the turn, naming the gate. */
const gateFailure = (error: unknown): TurnEvent => ({ type: 'turn.fail', error: failureOf('the step gate', error) })

/** A defect's record: turnchart's own errors as they are, anything else named for what failed. */
function failureOf(operation: string, error: unknown) {
  if (StorageError.isInstance(error)) return error.toJSON()
  const record = serializeError(error)
  return record.name === 'UnknownError' ? new UnknownError(`${operation} failed: ${record.message}`).toJSON() : record
}
