/** `retry`, `errorClassifier`, `retryPolicy`, `circuitBreaker`, `doomLoop` and `streamIdleTimeoutMs`: how failures and loops are decided. */
import { InvalidOptionError } from '../core/errors'
import type { ErrorClassifier, RetryPolicy } from '../policy/decide-failure'
import { defaultDoomLoopOptions, type DoomLoopOptions } from '../policy/doom-loop'
import { validateRetryOptions, type RetryOptions } from '../policy/retry-delay'
import { defaultCircuitBreaker, type CircuitBreakerOptions } from '../llm/circuit-rule'
import type { EngineOptions } from './options'
import { functionOption, nonNegativeInteger, optionGroup, timerMs } from './option-values'

export function resolveFailure(options: EngineOptions): {
  retry: RetryOptions
  errorClassifier: ErrorClassifier | undefined
  retryPolicy: RetryPolicy | undefined
  circuitBreaker: CircuitBreakerOptions | false
  doomLoop: DoomLoopOptions
  streamIdleTimeoutMs: number
} {
  const doomLoop = optionGroup('doomLoop', options.doomLoop, ['policy', 'repeats', 'maxCycleLength', 'cycleRepeats'])
  if (doomLoop.policy !== undefined && !['stop', 'ask', 'off'].includes(doomLoop.policy as string)) {
    throw new InvalidOptionError('doomLoop.policy', doomLoop.policy, "'stop', 'ask' or 'off'")
  }
  return {
    retry: validateRetryOptions(options.retry ?? {}, 'retry'),
    errorClassifier: functionOption('errorClassifier', options.errorClassifier),
    retryPolicy: functionOption('retryPolicy', options.retryPolicy),
    circuitBreaker: resolveCircuitBreaker(options.circuitBreaker),
    doomLoop: {
      policy: (doomLoop.policy as DoomLoopOptions['policy'] | undefined) ?? defaultDoomLoopOptions.policy,
      repeats: nonNegativeInteger('doomLoop.repeats', doomLoop.repeats, defaultDoomLoopOptions.repeats, 2),
      maxCycleLength: nonNegativeInteger('doomLoop.maxCycleLength', doomLoop.maxCycleLength, defaultDoomLoopOptions.maxCycleLength, 1),
      cycleRepeats: nonNegativeInteger('doomLoop.cycleRepeats', doomLoop.cycleRepeats, defaultDoomLoopOptions.cycleRepeats, 2),
    },
    streamIdleTimeoutMs: timerMs('streamIdleTimeoutMs', options.streamIdleTimeoutMs, 60_000, 1),
  }
}

/** `circuitBreaker`: `false`, or its fields over the defaults (a threshold of one failure at least, positive times). */
function resolveCircuitBreaker(value: EngineOptions['circuitBreaker']): CircuitBreakerOptions | false {
  if (value === false) return false
  const group = optionGroup('circuitBreaker', value, ['failureThreshold', 'windowMs', 'openMs'])
  return {
    failureThreshold: nonNegativeInteger('circuitBreaker.failureThreshold', group.failureThreshold, defaultCircuitBreaker.failureThreshold, 1),
    windowMs: timerMs('circuitBreaker.windowMs', group.windowMs, defaultCircuitBreaker.windowMs, 1),
    openMs: timerMs('circuitBreaker.openMs', group.openMs, defaultCircuitBreaker.openMs, 1),
  }
}
