/**
 * The step boundary: a step has ended, its tools' results are in, and the next model call is
 * about to be made. It is the one place of the runner between two steps, where what decides
 * the turn's next move between steps plugs in. Today: whether the last step's usage filled the
 * context (then the history is compacted first). Budgets, steering and stop conditions belong
 * here too.
 */
import type { TurnEvent } from '../../machines/turn.types'
import type { StepFinishPart } from '../core/types'
import { isUsageOverflow, type ModelLimits } from '../policy/overflow'

/** What the boundary reads of its turn: the last step's finish and the limits it is judged by. */
export interface BoundaryScope {
  lastStepFinish(): StepFinishPart | undefined
  readonly config: { limits: ModelLimits | undefined; compaction: { reserved: number | undefined } }
}

/**
 * The event that ends `tool-running`: the step's tools ran; `overflow` when its usage filled
 * the usable context (the same rule the step applied when it finished: the chart compacts
 * before the next step). A recovered turn judges the stored finish part the same way.
 *
 * @example
 * actor.send(stepBoundary(scope)) // { type: 'tools.finished', overflow: false }
 */
export function stepBoundary(scope: BoundaryScope): Extract<TurnEvent, { type: 'tools.finished' }> {
  const finish = scope.lastStepFinish()
  const { limits, compaction } = scope.config
  const overflow = limits !== undefined && finish !== undefined && isUsageOverflow(finish.tokens, limits, compaction.reserved)
  return { type: 'tools.finished', overflow }
}
