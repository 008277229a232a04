/**
 * The step gate's rules: between two model calls (before the first one too, after a step's
 * tools' results are in, after a compaction), whether the turn makes the next call. The chart
 * enters its `step-gate` state there and routes the one verdict this module returns:
 *
 * - `continue`: the next step starts;
 * - `complete`: a stop condition holds (`stopWhen`, an app's rule): the turn ends `completed`;
 * - `fail`: the turn ends `failed` with the rule's error (the step limit, an app's rule);
 * - `budget-exceeded`: the run tree's budget is spent: `failed`, `BudgetExceededError`;
 * - `steer`: messages steered into the turn were taken into its history; the gate decides
 *   again with them (an app's rule sees them);
 * - `output-retry` (structured output): the final answer did not match the schema; the model
 *   is told why and answers again, once.
 *
 * A turn with structured output reaches the gate after its final answer too; that answer is
 * decided first, before every other rule: it matches (`complete`, the object in the verdict),
 * it is sent back once (`output-retry`, when a step is left under `maxSteps` and the budget
 * admits it), or the turn fails with `StructuredOutputError`.
 *
 * Otherwise rules run in that order: the stop rules first (a turn that is done is not steered, a steer
 * it leaves starts the next turn), then the steering, then the budget (it counts the call it
 * admits, once per step). The rules that need the turn reach it through `GateTurn`, a narrow
 * interface the runner implements; the module itself does no I/O.
 */
import { BudgetExceededError, StepLimitError, StructuredOutputError, UnknownError, type SerializedError } from '../core/errors'
import { safeMessage, serializeError } from '../core/errors/serialize'
import type { StopCondition, StopConditionStep } from '../core/types'

/** What an app's rule is told at the gate (the names of the AI SDK's `prepareStep` options). */
export interface StepRuleInput {
  /** Steps (model calls) made so far in the turn: 0 before the first. The next call would be step `stepNumber + 1`. */
  stepNumber: number
  /** The finished steps, as `stopWhen` sees them. */
  steps: StopConditionStep[]
}

/**
 * An app's answer at the gate: `continue` (or nothing: no opinion, the next rule decides),
 * `complete` (the turn ends `completed`), or `fail` with the error the turn ends with.
 * (A later version may let `continue` carry the next step's settings, as `prepareStep` does.)
 */
export type StepRuleDecision = { verdict: 'continue' } | { verdict: 'complete' } | { verdict: 'fail'; error: Error }

/**
 * An app's own rule of the step gate (`EngineOptions.stepRules`), asked between two model
 * calls after turnchart's stop rules. A rule that throws fails the turn (`UnknownError`, naming it).
 *
 * @example
 * const quota: StepRule = { name: 'quota', decide: async ({ stepNumber }) => (await overQuota() ? { verdict: 'fail', error: new Error('over quota') } : undefined) }
 */
export interface StepRule {
  /** Named in the verdict (`gate.complete { rule }`, `gate.fail { rule }`) and in a throw's error. */
  name: string
  decide(input: StepRuleInput): StepRuleDecision | undefined | void | Promise<StepRuleDecision | undefined | void>
}

/** The gate's verdict: the event the chart routes from `step-gate`. */
export type StepVerdict =
  | { type: 'gate.continue' }
  | { type: 'gate.complete'; rule: string; output?: unknown }
  | { type: 'gate.fail'; rule: string; error: SerializedError }
  | { type: 'budget.exceeded'; error: SerializedError }
  | { type: 'turn.steered'; messages: number }
  | { type: 'output.retry'; reason: string }

/** Structured output: how many times a final answer that does not match its schema is sent back to the model. */
export const OUTPUT_RETRIES = 1

/** A final answer checked against the structured output's schema (src/llm/structured-output.ts). */
export type GateOutputCheck = { ok: true; value: unknown } | { ok: false; text: string; reasons: string[]; error: SerializedError }

/** What the gate reads of its turn and asks it to do (the runner implements it). */
export interface GateTurn {
  /** Steps made so far (the chart's `step`). */
  readonly stepNumber: number
  /** `maxSteps`: null, no limit. */
  readonly maxSteps: number | null
  readonly stopWhen: readonly StopCondition[]
  readonly rules: readonly StepRule[]
  /** The finished steps as stop conditions see them. */
  steps(): StopConditionStep[]
  /** Takes the messages steered into the session into the turn's history; resolves with how many. */
  takeSteered(): Promise<number>
  /** The run tree's budget: the error past it, else null (and the call about to be made is counted). */
  admit(): Promise<BudgetExceededError | null>
  /**
   * Structured output: the last step's final answer checked against the schema; null when the
   * turn has none, or its last step was no final answer (it called tools, or none finished).
   */
  checkOutput?(): Promise<GateOutputCheck | null>
  /** Structured output: answers already sent back (the chart's `outputRetries`). */
  readonly outputRetries?: number
  /** Structured output: stores the user message that tells the model why its answer was refused. */
  askAgain?(reasons: string[]): Promise<void>
}

/**
 * The verdict at the gate.
 *
 * @example
 * actor.send(await decideStep(turn)) // { type: 'gate.continue' }
 */
export async function decideStep(turn: GateTurn): Promise<StepVerdict> {
  const { stepNumber, maxSteps } = turn
  const answer = stepNumber > 0 && turn.checkOutput ? await turn.checkOutput() : null
  if (answer) return decideOutput(turn, answer)
  if (StepLimitError.reachedAt(stepNumber, maxSteps)) return { type: 'gate.fail', rule: 'maxSteps', error: new StepLimitError(maxSteps!).toJSON() }
  // (the finished steps are read only for a rule that reads them: a turn with none reads no step)
  if (stepNumber > 0 && turn.stopWhen.length > 0 && (await anyHolds(turn.stopWhen, turn.steps()))) return { type: 'gate.complete', rule: 'stopWhen' }
  for (const rule of turn.rules) {
    const decision = await decideBy(rule, { stepNumber, steps: stepNumber > 0 ? turn.steps() : [] })
    if (decision?.verdict === 'complete') return { type: 'gate.complete', rule: rule.name }
    if (decision?.verdict === 'fail') return { type: 'gate.fail', rule: rule.name, error: serializeError(decision.error) }
  }
  // (before the first call there is nothing to take: a steer reaches a turn once its prompt is stored)
  const steered = stepNumber > 0 ? await turn.takeSteered() : 0
  if (steered > 0) return { type: 'turn.steered', messages: steered }
  const refused = await turn.admit()
  if (refused) return { type: 'budget.exceeded', error: refused.toJSON() }
  return { type: 'gate.continue' }
}

/** A final answer of a turn with structured output: complete with the object, send it back once, or fail. */
async function decideOutput(turn: GateTurn, answer: GateOutputCheck): Promise<StepVerdict> {
  if (answer.ok) return { type: 'gate.complete', rule: 'output', output: answer.value }
  const retries = turn.outputRetries ?? 0
  const stepLeft = turn.maxSteps === null || turn.stepNumber < turn.maxSteps
  if (retries < OUTPUT_RETRIES && stepLeft && turn.askAgain) {
    const refused = await turn.admit()
    if (refused) return { type: 'budget.exceeded', error: refused.toJSON() }
    await turn.askAgain(answer.reasons)
    return { type: 'output.retry', reason: answer.reasons.join('; ') }
  }
  const error = new StructuredOutputError({ text: answer.text, reasons: answer.reasons, attempts: retries + 1, aiSdkError: answer.error })
  return { type: 'gate.fail', rule: 'output', error: error.toJSON() }
}

async function anyHolds(conditions: readonly StopCondition[], steps: StopConditionStep[]): Promise<boolean> {
  try {
    const answers = await Promise.all(conditions.map((condition) => condition({ steps })))
    return answers.some(Boolean)
  } catch (error) {
    throw new UnknownError(`a stopWhen condition threw: ${safeMessage(error)}`)
  }
}

async function decideBy(rule: StepRule, input: StepRuleInput): Promise<StepRuleDecision | undefined> {
  try {
    return (await rule.decide(input)) ?? undefined
  } catch (error) {
    throw new UnknownError(`the step rule '${rule.name}' threw: ${safeMessage(error)}`)
  }
}
