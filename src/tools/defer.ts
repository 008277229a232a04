/**
 * A deferred tool result: a tool's `execute` returns `defer()` when its result arrives later
 * (a CI run, a human task, a webhook). The call's part becomes `status: 'deferred'`, the turn
 * waits, and `engine.resolveCall(turnId, callId, { output } | { error })` hands the result in,
 * from any engine or through the chat handler. With `timeoutMs`, a stored deadline: whichever
 * engine sweeps past it settles the call as an error the model sees.
 */
import { InvalidArgumentError } from '../core/errors'
import { maxTimerMs } from '../core/timer-limit'

const deferKey = Symbol.for('turnchart.defer')

export interface DeferOptions {
  /** How long the call may wait for its result (from when `execute` returned); absent: no deadline. */
  timeoutMs?: number
}

/** What `defer()` returns: a marker the tool runner recognises (across copies of the package). */
export interface Deferral {
  readonly [deferKey]: true
  readonly timeoutMs?: number
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
  const { timeoutMs } = options
  if (timeoutMs !== undefined && (!Number.isInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > maxTimerMs)) {
    throw new InvalidArgumentError('timeoutMs', timeoutMs, `an integer from 1 to ${maxTimerMs} (defer)`)
  }
  return { [deferKey]: true, ...(timeoutMs !== undefined ? { timeoutMs } : {}) }
}

/** True when a tool's result is `defer()`'s marker. */
export function isDeferral(value: unknown): value is Deferral {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[deferKey] === true
}
