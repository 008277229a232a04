/**
 * Which model objects turnchart calls: the AI SDK's provider-level language models of the
 * specification versions below (`LanguageModelV3` from ai v6 providers, `LanguageModelV4` from
 * ai v7 providers). turnchart calls `doStream` itself, so it needs no `streamText` and no
 * particular major of `ai` at run time; a model id string (resolved by `ai`'s global provider)
 * and V2 models are refused when the engine is created.
 */

/** The `specificationVersion`s whose `doStream` turnchart reads (same stream-part subset). */
export const supportedSpecificationVersions = ['v3', 'v4'] as const

export type SupportedSpecificationVersion = (typeof supportedSpecificationVersions)[number]

/** What turnchart relies on in a model object, whatever its major. */
export interface ProviderLanguageModel {
  readonly specificationVersion: SupportedSpecificationVersion
  readonly provider: string
  readonly modelId: string
  // The call options and stream parts of V3 and V4 agree on everything turnchart sends and reads.
  doStream(options: unknown): PromiseLike<{
    stream: ReadableStream<unknown>
    response?: { headers?: Record<string, string | undefined> }
  }>
}

/**
 * Whether `model` is a language model object turnchart can call.
 *
 * @example
 * isSupportedModel(openai('gpt-5')) // true (a V3 or V4 model)
 * isSupportedModel('openai/gpt-5') // false: a gateway id string
 */
export function isSupportedModel(model: unknown): model is ProviderLanguageModel {
  if (typeof model !== 'object' || model === null) return false
  const { specificationVersion, doStream } = model as { specificationVersion?: unknown; doStream?: unknown }
  return typeof doStream === 'function' && (supportedSpecificationVersions as readonly unknown[]).includes(specificationVersion)
}

/** The `expected` text of the `InvalidOptionError` for an unsupported `model`. */
export const supportedModelsText =
  `an AI SDK language model object of specificationVersion ${supportedSpecificationVersions.map((v) => `'${v}'`).join(' or ')} ` +
  `(LanguageModelV3 from ai v6 providers, LanguageModelV4 from ai v7 providers; a model id string is not resolved)`
