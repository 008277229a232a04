/**
 * `recovery`, `leaseMs`, `parkAfterMs`, `controlPollIntervalMs`, `notifications`, `flushIntervalMs`,
 * `busyTimeoutMs` and `storage`: how turns survive a crash and an outage, reach the database,
 * and hear from other engines.
 */
import { InvalidOptionError } from '../core/errors'
import type { EngineOptions } from './options'
import { listenedOn } from '../store/backends/registry'
import { redactUrl } from '../store/redact-url'
import { booleanOption, optionGroup, timerMs } from './option-values'

export function resolveDurability(options: EngineOptions): {
  recovery: { policy: 'resume' | 'abort'; onOpen: boolean; intervalMs: number }
  leaseMs: number
  parkAfterMs: number
  controlPollIntervalMs: number
  notifications: boolean
  flushIntervalMs: number
  busyTimeoutMs: number
  storage: { outageMs: number }
} {
  const recovery = optionGroup('recovery', options.recovery, ['policy', 'onOpen', 'intervalMs'])
  if (recovery.policy !== undefined && recovery.policy !== 'resume' && recovery.policy !== 'abort') {
    throw new InvalidOptionError('recovery.policy', recovery.policy, "'resume' or 'abort'")
  }
  const leaseMs = timerMs('leaseMs', options.leaseMs, 30_000, 100)
  const storage = optionGroup('storage', options.storage, ['outageMs'])
  return {
    recovery: {
      policy: (recovery.policy as 'resume' | 'abort' | undefined) ?? 'resume',
      onOpen: booleanOption('recovery.onOpen', recovery.onOpen, true),
      intervalMs: timerMs('recovery.intervalMs', recovery.intervalMs, leaseMs),
    },
    leaseMs,
    parkAfterMs: timerMs('parkAfterMs', options.parkAfterMs, 60_000),
    controlPollIntervalMs: timerMs('controlPollIntervalMs', options.controlPollIntervalMs, 200, 10),
    notifications: notificationsOption(options.notifications),
    flushIntervalMs: timerMs('flushIntervalMs', options.flushIntervalMs, 250),
    busyTimeoutMs: timerMs('busyTimeoutMs', options.busyTimeoutMs, 5000),
    storage: { outageMs: timerMs('storage.outageMs', storage.outageMs, leaseMs) },
  }
}

/**
 * Whether the engine listens for PostgreSQL notifications when it can. A URL (where to listen,
 * for a Kysely instance of the app's) counts as yes; it stays out of the resolved options
 * (`engine.config` is printable, a URL may carry a password): the store opener reads it.
 */
function notificationsOption(value: EngineOptions['notifications']): boolean {
  if (value === undefined) return true
  if (typeof value === 'boolean') return value
  if (typeof value === 'string' && listenedOn(value)) return true
  throw new InvalidOptionError('notifications', typeof value === 'string' ? redactUrl(value) : value, 'true, false, or a postgres:// URL to listen on')
}
