/** `inspect`, `clock`, `onEvent`, `onSubscriberError`, `telemetry`, `pricing` and `redact`: what watches, times, prices and cleans a turn. */
import type { TurnchartEvent } from '../core/bus'
import { InvalidOptionError, NotificationListenerError } from '../core/errors'
import { minSecretLength } from '../core/secrets/redact-secrets'
import type { Pricing } from '../llm/usage'
import type { TelemetryOptions } from '../telemetry/telemetry'
import type { Clock, EngineOptions, InspectOption } from './options'
import { booleanOption, functionOption, optionGroup } from './option-values'

export function resolveObservability(options: EngineOptions): {
  inspect: InspectOption | undefined
  clock: Clock | undefined
  onEvent: ((event: TurnchartEvent) => void) | undefined
  onSubscriberError: (error: unknown) => void
  telemetry: TelemetryOptions
  pricing: Pricing | undefined
} {
  if (options.inspect !== undefined && typeof options.inspect !== 'function' && (typeof options.inspect !== 'object' || options.inspect === null)) {
    throw new InvalidOptionError('inspect', options.inspect, 'a function or an observer')
  }
  if (options.clock !== undefined && (typeof options.clock !== 'object' || options.clock === null || typeof options.clock.setTimeout !== 'function')) {
    throw new InvalidOptionError('clock', options.clock, 'an XState clock (setTimeout and clearTimeout), e.g. a SimulatedClock')
  }
  const telemetry = optionGroup('telemetry', options.telemetry, ['tracer', 'recordInputs', 'recordOutputs'])
  if (telemetry.tracer !== undefined && typeof (telemetry.tracer as { startSpan?: unknown } | null)?.startSpan !== 'function') {
    throw new InvalidOptionError('telemetry.tracer', telemetry.tracer, 'an OpenTelemetry Tracer (with startSpan)')
  }
  let pricing: Pricing | undefined
  if (options.pricing !== undefined) {
    pricing = optionGroup('pricing', options.pricing, ['input', 'output', 'cacheRead', 'cacheWrite']) as Pricing
    for (const [key, value] of Object.entries(pricing)) {
      if (typeof value !== 'number' || !(value >= 0)) throw new InvalidOptionError(`pricing.${key}`, value, 'a non-negative number')
    }
  }
  return {
    inspect: options.inspect,
    clock: options.clock,
    onEvent: functionOption('onEvent', options.onEvent),
    onSubscriberError: functionOption('onSubscriberError', options.onSubscriberError) ?? reportToConsole,
    telemetry: {
      ...(telemetry.tracer ? { tracer: telemetry.tracer as TelemetryOptions['tracer'] } : {}),
      recordInputs: booleanOption('telemetry.recordInputs', telemetry.recordInputs, false),
      recordOutputs: booleanOption('telemetry.recordOutputs', telemetry.recordOutputs, false),
    },
    pricing,
  }
}

/** `redact.secrets`: exact strings never stored nor published. The error names an index, never a secret. */
export function resolveSecrets(options: EngineOptions): string[] {
  const redact = optionGroup('redact', options.redact, ['secrets'])
  const secrets = redact.secrets ?? []
  if (!Array.isArray(secrets)) throw new InvalidOptionError('redact.secrets', '(hidden)', 'an array of strings')
  secrets.forEach((secret, i) => {
    if (typeof secret !== 'string' || secret.length < minSecretLength) {
      throw new InvalidOptionError(`redact.secrets[${i}]`, typeof secret === 'string' ? `(a string of ${secret.length} characters)` : typeof secret, `a string of at least ${minSecretLength} characters`)
    }
  })
  return secrets as string[]
}

/**
 * The default `onSubscriberError`: the error said for what it is. A notifications outage says
 * itself what happened (nothing threw: the engine polls meanwhile); anything else is the throw
 * of a subscriber or a hook, which stopped nothing.
 */
function reportToConsole(error: unknown): void {
  console.error(NotificationListenerError.isInstance(error) ? 'turnchart:' : 'turnchart: a subscriber or a hook threw (nothing stopped):', error)
}
