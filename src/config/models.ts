/** `model` and `models`: AI SDK model objects of a supported specification version, `model` being `models.default`. */
import { InvalidOptionError } from '../core/errors'
import { isSupportedModel, supportedModelsText, type ProviderLanguageModel } from '../llm/language-model'
import type { EngineOptions } from './options'
import { optionGroup } from './option-values'

/** What an error may say about a rejected model: never the whole object (its config may hold secrets). */
function modelSummary(model: unknown): unknown {
  if (typeof model !== 'object' || model === null) return model
  const { specificationVersion, provider, modelId } = model as Record<string, unknown>
  return { specificationVersion, provider, modelId }
}

export function resolveModels(options: EngineOptions): { model: ProviderLanguageModel; models: Record<string, ProviderLanguageModel> } {
  const models = { ...optionGroup('models', options.models) }
  for (const [name, m] of Object.entries(models)) {
    if (!isSupportedModel(m)) throw new InvalidOptionError(`models.${name}`, modelSummary(m), supportedModelsText)
  }
  if (options.model !== undefined && models.default !== undefined && options.model !== models.default) {
    throw new InvalidOptionError('models.default', modelSummary(models.default), 'absent when `model` is given (`model` is the default model)')
  }
  const model: unknown = options.model ?? models.default
  if (!isSupportedModel(model)) throw new InvalidOptionError('model', modelSummary(model), supportedModelsText)
  models.default = model
  return { model, models: models as Record<string, ProviderLanguageModel> }
}
