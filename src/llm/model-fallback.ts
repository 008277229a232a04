/**
 * Fallback models (`model: ['primary', 'backup']`): which model a step's attempt asks, and
 * whether a failed attempt goes on with the next one. The provider's failures only (an outage,
 * overload, a timeout, a refused connection, a rate limit whose wait is too long): the caller's
 * own (a bad request, a full context) would fail on every model alike.
 */
import type { ModelFallback } from '../../machines/turn.types'
import { isProvidersFailure, type FailureDecision } from '../policy/decide-failure'
import { defaultRetryOptions } from '../policy/retry-delay'
import type { ProviderLanguageModel } from './language-model'

/** A registered model by the name a turn gave it. */
export interface NamedModel {
  name: string
  model: ProviderLanguageModel
}

/** Where a step's attempt stands in the turn's list of models: which one it asks, and the attempt that one began on. */
export interface ModelAttempt {
  attempt: number
  model?: number
  modelSince?: number
}

/** The attempt's own number on the model it asks (1 on its first): what the retry policy counts. */
export function attemptOnModel(at: ModelAttempt): number {
  return at.attempt - (at.modelSince ?? 1) + 1
}

/** The model an attempt asks, by name: the turn's `models[at.model]`; undefined for a turn with one model. */
export function modelAsked(config: { models?: readonly NamedModel[] }, at: ModelAttempt): NamedModel | undefined {
  return config.models?.[at.model ?? 0]
}

/** The model object an attempt asks: the named one, else the turn's only model. */
export function modelFor(config: { model: ProviderLanguageModel; models?: readonly NamedModel[] }, at: ModelAttempt): ProviderLanguageModel {
  return modelAsked(config, at)?.model ?? config.model
}

/**
 * The fallback a failed attempt leads to, if any: a next model in the list, a failure of the
 * provider's kind, and either the retry policy gave up on this model (a `retry-after` past
 * `retry.maxHeaderDelayMs`, its attempts spent), it had `attemptsPerModel` attempts, or its
 * circuit is open (`CircuitOpenError`).
 *
 * @example
 * fallbackAfter(models, { attempt: 2, model: 0 }, { kind: 'retry', error, delayMs: 2000 }, 2)
 * // { model: 1, from: 'primary', to: 'backup', reason: 'APIError: Service Unavailable' }
 */
export function fallbackAfter(models: readonly NamedModel[] | undefined, at: ModelAttempt, decision: FailureDecision, attemptsPerModel = defaultRetryOptions.attemptsPerModel): ModelFallback | undefined {
  const current = at.model ?? 0
  const next = models?.[current + 1]
  if (!models || !next) return undefined
  const providers = isProvidersFailure(decision)
  // (a model whose circuit is open is not asked again in this step: the next one is asked at once)
  const circuitOpen = decision.error.name === 'CircuitOpenError'
  if (!providers || (decision.kind === 'retry' && !circuitOpen && attemptOnModel(at) < attemptsPerModel)) return undefined
  return { model: current + 1, from: models[current].name, to: next.name, reason: `${decision.error.name}: ${decision.error.message}` }
}
