/** `retry`, `errorClassifier`, `retryPolicy`, `doomLoop` and `streamIdleTimeoutMs`: how failures and loops are decided. */
import { InvalidOptionError } from '../core/errors'
import type { ErrorClassifier, RetryPolicy } from '../policy/decide-failure'
import { defaultDoomLoopOptions, type DoomLoopOptions } from '../policy/doom-loop'
import { validateRetryOptions, type RetryOptions } from '../policy/retry-delay'
import type { EngineOptions } from './options'
import { functionOption, nonNegativeInteger, optionGroup, timerMs } from './option-values'

export function resolveFailure(options: EngineOptions): {
  retry: RetryOptions
  errorClassifier: ErrorClassifier | undefined
  retryPolicy: RetryPolicy | undefined
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
    doomLoop: {
      policy: (doomLoop.policy as DoomLoopOptions['policy'] | undefined) ?? defaultDoomLoopOptions.policy,
      repeats: nonNegativeInteger('doomLoop.repeats', doomLoop.repeats, defaultDoomLoopOptions.repeats, 2),
      maxCycleLength: nonNegativeInteger('doomLoop.maxCycleLength', doomLoop.maxCycleLength, defaultDoomLoopOptions.maxCycleLength, 1),
      cycleRepeats: nonNegativeInteger('doomLoop.cycleRepeats', doomLoop.cycleRepeats, defaultDoomLoopOptions.cycleRepeats, 2),
    },
    streamIdleTimeoutMs: timerMs('streamIdleTimeoutMs', options.streamIdleTimeoutMs, 60_000, 1),
  }
}
