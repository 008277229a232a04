/**
 * A what-if run past a divergence: the recorded model answers while the run follows the
 * recording; at the first call it cannot answer (`RecordingDivergedError`: another prompt,
 * another tool result, more steps) that call and every later one go to a live model.
 */
import type { EngineModel } from '../config/options'
import { RecordingDivergedError } from '../core/errors'
import type { RecordedModel } from './recorded-model'

/** Where the live model took over. */
export interface Divergence {
  /** The model call (1-based) the recording could not answer. */
  call: number
  step?: number
  /** Why the call was not the recorded one. */
  reason: string
}

type StreamingModel = { specificationVersion: string; provider: string; modelId: string; supportedUrls?: unknown; doStream(options: unknown): PromiseLike<unknown>; doGenerate(options: unknown): PromiseLike<unknown> }

/**
 * @example
 * const model = liveAfterDivergence(recorded, openai('gpt-4o-mini'), (d) => console.log(d.reason))
 */
export function liveAfterDivergence(recorded: RecordedModel, live: EngineModel, onDiverge: (divergence: Divergence) => void): EngineModel {
  const [from, to] = [recorded as unknown as StreamingModel, live as unknown as StreamingModel]
  let diverged = false
  const model: StreamingModel = {
    specificationVersion: to.specificationVersion,
    provider: to.provider,
    modelId: to.modelId,
    supportedUrls: to.supportedUrls ?? {},
    async doStream(options: unknown) {
      if (!diverged) {
        try {
          return await from.doStream(options)
        } catch (error) {
          if (!RecordingDivergedError.isInstance(error)) throw error
          diverged = true
          onDiverge({ call: error.call, ...(error.step !== undefined ? { step: error.step } : {}), reason: error.reason })
        }
      }
      return to.doStream(options)
    },
    doGenerate: (options: unknown) => to.doGenerate(options),
  }
  return model as unknown as EngineModel
}
