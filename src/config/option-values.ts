/**
 * The checks every option validator is made of: each throws `InvalidOptionError` naming the
 * option (its full path, e.g. `toolExecution.timeoutMs`) and the value.
 */
import { InvalidOptionError } from '../core/errors'
import { maxTimerMs } from '../core/timer-limit'

export function nonNegativeInteger(option: string, value: unknown, fallback: number, min = 0): number {
  if (value === undefined) return fallback
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min) {
    throw new InvalidOptionError(option, value, min === 0 ? 'a non-negative integer' : `an integer >= ${min}`)
  }
  return value
}

/** A delay that becomes a Node timer: an integer from `min` to 2^31-1 ms (larger ones fire after 1 ms). */
export function timerMs(option: string, value: unknown, fallback: number, min = 0): number {
  const ms = nonNegativeInteger(option, value, fallback, min)
  if (ms > maxTimerMs) throw new InvalidOptionError(option, value, `an integer from ${min} to ${maxTimerMs} ms (the longest delay a timer can hold)`)
  return ms
}

export function functionOption<T>(option: string, value: T | undefined): T | undefined {
  if (value !== undefined && typeof value !== 'function') throw new InvalidOptionError(option, value, 'a function')
  return value
}

export function booleanOption(option: string, value: unknown, fallback: boolean): boolean {
  if (value === undefined) return fallback
  if (typeof value !== 'boolean') throw new InvalidOptionError(option, value, 'a boolean')
  return value
}

/** An option group: an object (absent: empty), with no key outside `known`. */
export function optionGroup(option: string, value: unknown, known?: readonly string[]): Record<string, unknown> {
  if (value === undefined) return {}
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new InvalidOptionError(option, value, 'an object')
  const group = value as Record<string, unknown>
  if (known) {
    for (const key of Object.keys(group)) {
      if (!known.includes(key)) throw new InvalidOptionError(`${option}.${key}`, group[key], `one of ${known.join(', ')} (unknown option)`)
    }
  }
  return group
}
