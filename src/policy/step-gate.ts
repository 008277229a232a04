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
 *   again with them (an app's rule sees them).
 *
 * Rules run in that order: the stop rules first (a turn that is done is not steered, a steer
 * it leaves starts the next turn), then the steering, then the budget (it counts the call it
 * admits, once per step). The rules that need the turn reach it through `GateTurn`, a narrow
 * interface the runner implements; the module itself does no I/O.
 */
import { BudgetExceededError, StepLimitError, UnknownError, type SerializedError } from '../core/errors'
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
  | { type: 'gate.complete'; rule: string }
  | { type: 'gate.fail'; rule: string; error: SerializedError }
  | { type: 'budget.exceeded'; error: SerializedError }
  | { type: 'turn.steered'; messages: number }

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
}

/**
 * The verdict at the gate.
 *
 * @example
 * actor.send(await decideStep(turn)) // { type: 'gate.continue' }
 */
export async function decideStep(turn: GateTurn): Promise<StepVerdict> {
  const { stepNumber, maxSteps } = turn
  if (maxSteps !== null && stepNumber >= maxSteps) return { type: 'gate.fail', rule: 'maxSteps', error: new StepLimitError(maxSteps).toJSON() }
  const steps = stepNumber > 0 ? turn.steps() : []
  if (stepNumber > 0 && turn.stopWhen.length > 0 && (await anyHolds(turn.stopWhen, steps))) return { type: 'gate.complete', rule: 'stopWhen' }
  for (const rule of turn.rules) {
    const decision = await decideBy(rule, { stepNumber, steps })
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
