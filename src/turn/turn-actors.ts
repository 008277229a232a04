/**
 * The turn chart's four actors, each in the gated wrapper (gated-actor.ts): the step gate (its
 * rules, between two model calls), the step (one model call), the tools, the compaction. Each
 * one's failure event is the chart's failure edge for its state. Made once per engine
 * (`EngineChart`): what an invocation gets is its `input` and the turn that input names, bound
 * with its scope, run tree and log (typed as the part of the turn each actor uses: `GateRun`,
 * `StepRun`, `ToolsRun`, `CompactRun`).
 */
import { turnMachine, type TurnMachine, type CompactInput, type RunToolsInput, type StepGateInput, type StreamStepInput } from '../../machines/turn.machine'
import type { TurnEvent } from '../../machines/turn.types'
import { serializeError, StorageError, UnknownError } from '../core/errors'
import { summarize, type SummaryScope } from '../compaction/summarize'
import { streamStep, type StepRun } from '../llm/stream-step'
import { runTools, type ToolRunScope } from '../tools/run-tools'
import type { CallPorts } from '../tools/call-info'
import { gatedActor, type BoundTurn, type WriteAheadGate } from './gated-actor'
import type { HandoffPoint } from './handoff-point'
import type { RunTree } from './run-tree/run-tree'
import { decideStep, type GateTurn } from '../policy/step-gate'
import { askAgainText, checkOutput } from '../llm/structured-output'
import { finalTextOf } from './turn-result'
import { isUsageOverflow } from '../policy/overflow'
import type { TurnScope } from './turn-scope'
import type { TurnMessages } from './turn-messages'
import type { UserMessages } from './user-messages'
import type { StateExit } from '../core/state-exit'

/** What a turn's actors work with: its scope, its run tree (the budget) and what the engine lends its tool calls. */
export interface TurnRun {
  scope: TurnScope
  tree: RunTree
  /** The child turn runner of this turn (run trees), the engine's schedules. */
  calls: CallPorts
  /** Where a handoff asked by the engine holds the turn (its next step gate). */
  handoff?: HandoffPoint
}

/**
 * What each actor gets of its turn: the part of the scope (and of the run tree) it uses, and no
 * more. The scope is one object; these types are each actor's contract with it.
 */
type GateScope = Pick<TurnScope, 'turnId' | 'config' | 'output'> & {
  messages: Pick<TurnMessages, 'stepResults' | 'lastStepFinish' | 'lastStepAnswered' | 'assistantMessages'>
  userMessages: Pick<UserMessages, 'takeSteered' | 'askAgain'>
}
/** The step gate: its rules over the turn's steps, the budget it admits the next call with, a handoff it holds at. */
interface GateRun {
  scope: GateScope
  tree: Pick<RunTree, 'admit'>
  handoff?: HandoffPoint
}
/** The tools: the step's calls, the runner of child turns, the step's usage judged again for an overflow, then the step gate. */
interface ToolsRun extends GateRun {
  scope: ToolRunScope & GateScope
  calls: CallPorts
}
/** The compaction: the summary request over the history, a model call the budget counts. */
interface CompactRun {
  scope: SummaryScope & { messages: Pick<TurnMessages, 'lastStepAnswered' | 'all'> }
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
    steps: () => scope.messages.stepResults(input.step),
    takeSteered: () => scope.userMessages.takeSteered(),
    // (a turn's first gate runs in its prompt's transaction: it reads no stored spending)
    admit: () => tree.admit(scope.turnId, { readStored: input.step > 0 }),
    outputRetries: input.outputRetries,
    checkOutput: async () => {
      const { output } = scope.config
      if (!output) return null
      const finish = scope.messages.lastStepFinish()
      if (!finish || !scope.messages.lastStepAnswered()) return null
      return checkOutput(output, finalTextOf(scope.messages.assistantMessages()), finish.reason)
    },
    askAgain: (reasons) => scope.userMessages.askAgain(askAgainText(reasons)),
  }
}

/** What each of the chart's actors acts for, in one turn: its write-ahead gate and its part of the turn. */
interface TurnBindings {
  stepGate: BoundTurn<GateRun>
  streamStep: BoundTurn<StepRun>
  runTools: BoundTurn<ToolsRun>
  compact: BoundTurn<CompactRun>
}

/** One turn's bindings: `log` is the write-ahead gate of the three actors that act outside the turn. */
const bindingsOf = (run: TurnRun, log: WriteAheadGate): TurnBindings => ({
  stepGate: { gate: noCommitNeeded, turn: run },
  // (the step counts its calls on the run tree itself: nothing stands between the actor and the step)
  streamStep: { gate: log, turn: { scope: run.scope, meter: run.tree } },
  runTools: { gate: log, turn: run },
  compact: { gate: log, turn: run },
})

/** Finds, for an actor of the chart, what it acts for in the turn its input names. */
type Binder = <K extends keyof TurnBindings>(actor: K) => (input: { turnId: string }) => TurnBindings[K] | undefined

/** The chart's actors: `bound` finds each invocation's turn. */
const actorsOf = (bound: Binder) => ({
  stepGate: gatedActor<StepGateInput, GateRun>(bound('stepGate'), {
    run: async (turn, input) => {
      // A handoff was asked: the gate holds (nothing is in flight here) and the turn is detached.
      if (turn.handoff?.requested) return turn.handoff.hold()
      return gateVerdict(turn, input)
    },
    failure: gateFailure,
  }),
  streamStep: gatedActor<StreamStepInput, StepRun>(bound('streamStep'), {
    run: streamStep,
    // A defect, not the provider's answer: the step fails, without a retry.
    failure: (error): TurnEvent => ({ type: 'step.failed', error: serializeError(error), overflow: false, retryDelayMs: null }),
  }),
  runTools: gatedActor<RunToolsInput, ToolsRun>(bound('runTools'), {
    run: runToolsThenGate,
    // A tool's own throw is its part; only a defect of the runner gets here: the turn fails.
    failure: (error): TurnEvent => ({ type: 'turn.fail', error: failureOf('running the tools', error) }),
  }),
  compact: gatedActor<CompactInput, CompactRun>(bound('compact'), {
    // Whether the summary follows a final answer is read before the summary replaces the history.
    run: async ({ scope, tree }, input, exit) => {
      // A summary is a model call the budget counts; the next step gate checks it.
      tree.called()
      const event = await summarize(scope, { ...input, completes: scope.messages.lastStepAnswered() }, exit)
      const summary = scope.messages.all.at(-1)?.info
      if (event.type === 'compaction.finished' && summary?.summary && summary.tokens) tree.spend({ tokens: summary.tokens, cost: summary.cost ?? 0 })
      return event
    },
    failure: (error): TurnEvent => ({ type: 'compaction.failed', error: serializeError(error), retryDelayMs: null }),
  }),
})

/**
 * The turn chart as one engine runs it: provided once with the engine's actors, each of which
 * acts for the turn its invocation's `input` names (`turnId`), among the turns bound here.
 *
 * Why once, not per turn: XState's `provide` builds the chart's nodes again (0.25–0.3 ms a
 * turn), and each new chart's nodes compute their transitions again and make XState's code
 * polymorphic; measured on a turn of 10 steps, each build in its own processes, a chart per turn
 * cost ~9 % more CPU and ~5.5 % more allocation per step than this one (bench/NOTES.md, issue 54). The actor's contract stays
 * its input and the turn it names; the turn is found by that name in this table, which runTurn
 * fills before the turn's actor exists and empties once it has stopped, never through XState's
 * actor system.
 *
 * @example
 * const chart = new EngineChart()
 * const release = chart.bind({ scope, tree }, log)
 * const actor = createActor(chart.machine, { input })
 */
export class EngineChart {
  /** The chart with this engine's actors. */
  readonly machine: TurnMachine
  readonly #turns = new Map<string, TurnBindings>()

  constructor() {
    this.machine = turnMachine.provide({ actors: actorsOf((actor) => (input) => this.#turns.get(input.turnId)?.[actor]) })
  }

  /**
   * Binds a turn (`run.scope.turnId`) for the chart's actors, `log` its write-ahead gate, until
   * the returned release runs (once the turn's actor has stopped). A turn bound again (run anew
   * by this engine) replaces the binding; the old one's release then leaves the new one be.
   */
  bind(run: TurnRun, log: WriteAheadGate): () => void {
    const { turnId } = run.scope
    const bindings = bindingsOf(run, log)
    this.#turns.set(turnId, bindings)
    return () => {
      if (this.#turns.get(turnId) === bindings) this.#turns.delete(turnId)
    }
  }
}

/**
 * The step's calls, then the step gate, decided here once their results are in (one transition
 * to the next step, not two): nothing outside the turn is acted on before the verdict's row, the
 * next step's, is committed. Calls that wait, an overflow (compacted before the gate) and a
 * handoff (held in `step-gate`, as the gate holds it) leave without a verdict.
 */
async function runToolsThenGate(turn: ToolsRun, input: RunToolsInput, exit: StateExit): Promise<TurnEvent> {
  const { scope, calls } = turn
  const waiting = await runTools(scope, exit, calls)
  // Calls in doubt or deferred: the turn waits for them (the others have their results).
  if (waiting.inDoubt.length > 0 || waiting.deferred.length > 0) return { type: 'tools.waiting', ...waiting }
  // The step's usage judged again by the rule the step applied: a full context is compacted before the gate.
  const { limits, compaction } = scope.config
  const finish = limits !== undefined ? scope.messages.lastStepFinish() : undefined
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
