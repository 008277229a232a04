/**
 * A deferred tool result: a tool's `execute` returns `defer()` when its result arrives later
 * (a CI run, a human task, a webhook). The call's part becomes `status: 'deferred'`, the turn
 * waits, and `engine.resolveCall(turnId, callId, { output } | { error })` hands the result in,
 * from any engine or through the chat handler. With `timeoutMs` (or `until`), a stored deadline:
 * whichever engine sweeps past it settles the call, as an error the model sees or, with
 * `onDeadline`, as that output; `engine.wake(turnId)` brings such a deadline forward.
 */
import { InvalidArgumentError } from '../core/errors'
import { maxTimerMs } from '../core/timer-limit'

const deferKey = Symbol.for('turnchart.defer')

export interface DeferOptions {
  /** How long the call may wait for its result (from when `execute` returned); absent: no deadline. */
  timeoutMs?: number
  /**
   * The deadline as a time (epoch ms or a `Date`), instead of `timeoutMs`: stored, so it may be
   * days away (no timer holds it; the engine that sweeps past it settles the call).
   */
  until?: number | Date
  /** What the call returns at its deadline (the model sees it as the tool's result); absent: the deadline is an error. */
  onDeadline?: { output: unknown }
}

/** What `defer()` returns: a marker the tool runner recognises (across copies of the package). */
export interface Deferral {
  readonly [deferKey]: true
  readonly timeoutMs?: number
  /** The deadline (epoch ms), when given as a time. */
  readonly until?: number
  readonly onDeadline?: { output: unknown }
}

/**
 * The result of a tool whose result is handed in later with `engine.resolveCall`.
 *
 * @example
 * execute: async (input, options) => {
 *   const { turnId, callId } = callInfo(options)
 *   await ci.start(input, { callback: `/api/chat/calls?turnId=${turnId}&callId=${callId}` })
 *   return defer({ timeoutMs: 3_600_000 })
 * }
 */
export function defer(options: DeferOptions = {}): Deferral {
  const { timeoutMs, onDeadline } = options
  if (timeoutMs !== undefined && (!Number.isInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > maxTimerMs)) {
    throw new InvalidArgumentError('timeoutMs', timeoutMs, `an integer from 1 to ${maxTimerMs} (defer)`)
  }
  const until = options.until instanceof Date ? options.until.getTime() : options.until
  if (until !== undefined && (!Number.isSafeInteger(until) || until < 0)) throw new InvalidArgumentError('until', options.until, 'a time: epoch milliseconds or a valid Date (defer)')
  if (until !== undefined && timeoutMs !== undefined) throw new InvalidArgumentError('until', options.until, 'until or timeoutMs, not both (defer)')
  if (onDeadline !== undefined && (typeof onDeadline !== 'object' || onDeadline === null || !('output' in onDeadline))) {
    throw new InvalidArgumentError('onDeadline', onDeadline, 'an object { output } (defer)')
  }
  if (onDeadline !== undefined && until === undefined && timeoutMs === undefined) throw new InvalidArgumentError('onDeadline', onDeadline, 'a deadline with it: timeoutMs or until (defer)')
  return { [deferKey]: true, ...(timeoutMs !== undefined ? { timeoutMs } : {}), ...(until !== undefined ? { until } : {}), ...(onDeadline ? { onDeadline: { output: onDeadline.output } } : {}) }
}

/** The deadline a deferral asks for (epoch ms), counted from `now`; undefined: none. */
export function deadlineOf(deferral: Deferral, now: number): number | undefined {
  return deferral.until ?? (deferral.timeoutMs !== undefined ? now + deferral.timeoutMs : undefined)
}

/** True when a tool's result is `defer()`'s marker. */
export function isDeferral(value: unknown): value is Deferral {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[deferKey] === true
}
