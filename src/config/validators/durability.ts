/** `recovery`, `leaseMs`, `controlPollIntervalMs`, `flushIntervalMs` and `busyTimeoutMs`: how turns survive a crash and reach the database. */
import { InvalidOptionError } from '../../core/errors'
import type { EngineOptions } from '../options'
import { booleanOption, optionGroup, timerMs } from '../option-values'

export function resolveDurability(options: EngineOptions): {
  recovery: { policy: 'resume' | 'abort'; onOpen: boolean; intervalMs: number }
  leaseMs: number
  controlPollIntervalMs: number
  flushIntervalMs: number
  busyTimeoutMs: number
} {
  const recovery = optionGroup('recovery', options.recovery, ['policy', 'onOpen', 'intervalMs'])
  if (recovery.policy !== undefined && recovery.policy !== 'resume' && recovery.policy !== 'abort') {
    throw new InvalidOptionError('recovery.policy', recovery.policy, "'resume' or 'abort'")
  }
  const leaseMs = timerMs('leaseMs', options.leaseMs, 30_000, 100)
  return {
    recovery: {
      policy: (recovery.policy as 'resume' | 'abort' | undefined) ?? 'resume',
      onOpen: booleanOption('recovery.onOpen', recovery.onOpen, true),
      intervalMs: timerMs('recovery.intervalMs', recovery.intervalMs, leaseMs),
    },
    leaseMs,
    controlPollIntervalMs: timerMs('controlPollIntervalMs', options.controlPollIntervalMs, 200, 10),
    flushIntervalMs: timerMs('flushIntervalMs', options.flushIntervalMs, 250),
    busyTimeoutMs: timerMs('busyTimeoutMs', options.busyTimeoutMs, 5000),
  }
}
