/**
 * A tool puts its turn to sleep until a time: "check the deploy again in ten minutes", "follow
 * up tomorrow". Its `execute` returns `sleep({ ms })` or `sleep({ until })`: the call is a
 * deferred call that settles itself at that time with `result` (`defer({ until, onDeadline })`),
 * so the turn waits in `sleeping`, parks (no actor, lease or timer held, however long the sleep),
 * and goes on at that time on whichever engine sweeps, the model seeing `result` as the tool's
 * result. `engine.wake(turnId)` ends the sleep sooner; `engine.resolveCall` hands in another result.
 */
import { InvalidArgumentError } from '../core/errors'
import { defer, type Deferral } from './defer'

export interface SleepOptions {
  /** How long to sleep, in milliseconds (any length: the time is stored, no timer holds it). */
  ms?: number
  /** Until when (epoch ms or a `Date`), instead of `ms`. */
  until?: number | Date
  /** What the model sees as the tool's result when the sleep ends; default `{ awake: true, scheduledFor }` (an ISO time). */
  result?: unknown
}

/**
 * @example
 * execute: async ({ service }) => {
 *   if (await deployed(service)) return 'deployed'
 *   return sleep({ ms: 10 * 60_000, result: 'ten minutes passed: check the deploy again' })
 * }
 */
export function sleep(options: SleepOptions): Deferral {
  const { ms, result } = options ?? {}
  if ((ms === undefined) === (options?.until === undefined)) throw new InvalidArgumentError('options', options, 'one of { ms } or { until } (sleep)')
  if (ms !== undefined && (!Number.isSafeInteger(ms) || ms < 0)) throw new InvalidArgumentError('ms', ms, 'a whole number of milliseconds, 0 or more (sleep)')
  const until = ms !== undefined ? Date.now() + ms : options.until!
  const at = until instanceof Date ? until.getTime() : until
  const output = result !== undefined ? result : { awake: true, scheduledFor: Number.isSafeInteger(at) ? new Date(at).toISOString() : String(at) }
  return defer({ until, onDeadline: { output } })
}
