/**
 * The step boundary: a step has ended, its tools' results are in, and the next model call is
 * about to be made. It is the one place of the runner between two steps, where what decides
 * the turn's next move between steps plugs in: the turn's stop conditions (`stopWhen`: the turn
 * completes), and whether the last step's usage filled the context (the history is compacted
 * before the next call).
 */
import type { TurnEvent } from '../../machines/turn.types'
import { UnknownError } from '../core/errors'
import { safeMessage } from '../core/errors/serialize'
import type { StepFinishPart, StopCondition, StopConditionStep } from '../core/types'
import { isUsageOverflow, type ModelLimits } from '../policy/overflow'

/** What the boundary reads of its turn: the last step, the steps so far, and the rules it applies. */
export interface BoundaryScope {
  lastStepFinish(): StepFinishPart | undefined
  stepResults(step: number): StopConditionStep[]
  readonly config: { limits: ModelLimits | undefined; compaction: { reserved: number | undefined }; stopWhen: StopCondition[] }
}

/**
 * The event that ends `tool-running` after step `step`: `stop` when one of the turn's stop
 * conditions holds (the turn completes); `overflow` when the step's usage filled the usable
 * context (the same rule the step applied when it finished). A recovered turn judges the
 * stored parts the same way. A condition that throws fails the turn (the tool actor's
 * failure), naming it.
 *
 * @example
 * actor.send(await stepBoundary(scope, 3)) // { type: 'tools.finished', overflow: false, stop: false }
 */
export async function stepBoundary(scope: BoundaryScope, step: number): Promise<Extract<TurnEvent, { type: 'tools.finished' }>> {
  const finish = scope.lastStepFinish()
  const { limits, compaction, stopWhen } = scope.config
  const overflow = limits !== undefined && finish !== undefined && isUsageOverflow(finish.tokens, limits, compaction.reserved)
  return { type: 'tools.finished', overflow, stop: stopWhen.length > 0 && (await anyHolds(stopWhen, scope.stepResults(step))) }
}

async function anyHolds(conditions: StopCondition[], steps: StopConditionStep[]): Promise<boolean> {
  try {
    const answers = await Promise.all(conditions.map((condition) => condition({ steps })))
    return answers.some(Boolean)
  } catch (error) {
    throw new UnknownError(`a stopWhen condition threw: ${safeMessage(error)}`)
  }
}
