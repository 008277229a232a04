/** `model` and `models`: AI SDK model objects of a supported specification version, `model` being `models.default`; `rateLimits`, by their names. */
import { InvalidOptionError } from '../core/errors'
import { isSupportedModel, supportedModelsText, type ProviderLanguageModel } from '../llm/language-model'
import type { EngineOptions } from './options'
import { nonNegativeInteger, optionGroup } from './option-values'
import type { RateLimit } from '../llm/rate-limit-rule'

/** What an error may say about a rejected model: never the whole object (its config may hold secrets). */
function modelSummary(model: unknown): unknown {
  if (typeof model !== 'object' || model === null) return model
  const { specificationVersion, provider, modelId } = model as Record<string, unknown>
  return { specificationVersion, provider, modelId }
}

export function resolveModels(options: EngineOptions): { model: ProviderLanguageModel; models: Record<string, ProviderLanguageModel>; defaultModels?: string[] } {
  const models = { ...optionGroup('models', options.models) }
  for (const [name, m] of Object.entries(models)) {
    if (!isSupportedModel(m)) throw new InvalidOptionError(`models.${name}`, modelSummary(m), supportedModelsText)
  }
  if (Array.isArray(options.model)) return modelList(options.model, models as Record<string, ProviderLanguageModel>)
  if (options.model !== undefined && models.default !== undefined && options.model !== models.default) {
    throw new InvalidOptionError('models.default', modelSummary(models.default), 'absent when `model` is given (`model` is the default model)')
  }
  const model: unknown = options.model ?? models.default
  if (!isSupportedModel(model)) throw new InvalidOptionError('model', modelSummary(model), supportedModelsText)
  models.default = model
  return { model, models: models as Record<string, ProviderLanguageModel> }
}

/** `model: ['primary', 'backup']`: names of `models`, each once; the first is the default model. */
function modelList(names: unknown[], models: Record<string, ProviderLanguageModel>): { model: ProviderLanguageModel; models: Record<string, ProviderLanguageModel>; defaultModels: string[] } {
  const registered = `a name of models (${Object.keys(models).join(', ') || 'none given'})`
  if (names.length === 0) throw new InvalidOptionError('model', names, `a model, or a non-empty list of names of models`)
  for (const name of names) if (typeof name !== 'string' || !Object.hasOwn(models, name)) throw new InvalidOptionError('model', name, registered)
  if (new Set(names).size !== names.length) throw new InvalidOptionError('model', names, 'a list of models that names each once')
  const first = models[names[0] as string]
  if (models.default !== undefined && models.default !== first) throw new InvalidOptionError('models.default', modelSummary(models.default), "absent when `model` is a list (the list's first is the default model)")
  return { model: first, models: { ...models, default: first }, defaultModels: names as string[] }
}

/**
 * `rateLimits`: per name of `models` (`default` for `model`), a limit of requests and of tokens
 * a minute, each at least 1 when given.
 */
export function resolveRateLimits(options: EngineOptions, models: Record<string, ProviderLanguageModel>): Record<string, RateLimit> {
  const limits: Record<string, RateLimit> = {}
  for (const [name, value] of Object.entries(optionGroup('rateLimits', options.rateLimits))) {
    if (!Object.hasOwn(models, name)) throw new InvalidOptionError(`rateLimits.${name}`, value, `a limit of a name of models (${Object.keys(models).join(', ')})`)
    const group = optionGroup(`rateLimits.${name}`, value, ['requestsPerMinute', 'tokensPerMinute'])
    const requestsPerMinute = group.requestsPerMinute === undefined ? undefined : nonNegativeInteger(`rateLimits.${name}.requestsPerMinute`, group.requestsPerMinute, 0, 1)
    const tokensPerMinute = group.tokensPerMinute === undefined ? undefined : nonNegativeInteger(`rateLimits.${name}.tokensPerMinute`, group.tokensPerMinute, 0, 1)
    limits[name] = { ...(requestsPerMinute !== undefined ? { requestsPerMinute } : {}), ...(tokensPerMinute !== undefined ? { tokensPerMinute } : {}) }
  }
  return limits
}
