/**
 * The engine's services, built from its resolved options: telemetry, the redactor of
 * credentials, and the failure policies (the app's error classifier and retry policy, or
 * turnchart's). Kept apart from the options so that the options stay plain values.
 */
import type { ResolvedConfig } from '../config/resolved-config'
import { createRedactor, type Redactor } from '../core/secrets/redact-secrets'
import { classifyError } from '../policy/classify-error'
import { defaultFailurePolicies, type FailurePolicies } from '../policy/decide-failure'
import { Telemetry } from '../telemetry/telemetry'
import type { ModelCircuits } from '../llm/model-circuits'
import type { ModelRateLimits } from '../llm/model-rate-limits'
import { isFinalState } from '../../machines/turn.machine'

export interface EngineServices {
  telemetry: Telemetry
  redactor: Redactor
  failure: FailurePolicies
  /** The models' circuits (`circuitBreaker`), made once the store is open; absent when turned off. */
  circuits?: ModelCircuits
  /** The models' rate limits (`rateLimits`), made once the store is open; absent when no model has one. */
  rateLimits?: ModelRateLimits
  /** The app's `onSubscriberError` behind a boundary: where a hook's failure that ends nothing is told. */
  onHookError(error: unknown): void
}

/**
 * @example
 * const services = createEngineServices(config, options.redact?.secrets ?? [], report)
 */
export function createEngineServices(config: ResolvedConfig, secrets: readonly string[], onHookError: (error: unknown) => void): EngineServices {
  const redactor = createRedactor(secrets)
  const defaults = defaultFailurePolicies(config.retry)
  return {
    // A broken tracer costs spans, never a turn: its errors go where subscribers' errors go.
    telemetry: new Telemetry(config.telemetry ?? {}, onHookError, isFinalState),
    redactor,
    failure: {
      // The default classifier gets the app's secrets, so a body is redacted before it is cut to 8 KB.
      classify: config.errorClassifier ?? ((error: unknown) => classifyError(error, redactor)),
      retry: config.retryPolicy ?? defaults.retry,
      attemptsPerModel: config.retry.attemptsPerModel,
    },
    onHookError,
  }
}
