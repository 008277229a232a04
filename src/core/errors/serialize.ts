/** Any thrown value as a stored error record, and its message, without ever throwing. */
import { UnknownError } from './provider-errors'
import { TurnchartError, type SerializedError } from './turnchart-error'

/** Turns any thrown value into the stored `{ name, message, ...fields }` form. */
export function serializeError(error: unknown): SerializedError {
  if (TurnchartError.isTurnchartError(error)) return error.toJSON()
  return new UnknownError(safeMessage(error)).toJSON()
}

/**
 * The message of any thrown value, never throwing itself: a Proxy, a revoked Proxy or an
 * Error whose `message` getter throws still gives a string.
 *
 * @example
 * safeMessage(new Error('boom')) // 'boom'
 * safeMessage(42) // '42'
 */
export function safeMessage(error: unknown): string {
  try {
    if (typeof error === 'string') return error
    if (error instanceof Error) {
      const message = error.message
      if (typeof message === 'string' && message) return message
      const name = error.name
      return typeof name === 'string' && name ? name : 'Error'
    }
    return describeValue(error)
  } catch {
    return `a value that cannot be read (${safeTypeOf(error)})`
  }
}

function safeTypeOf(value: unknown): string {
  try {
    if (value === null) return 'null'
    if (typeof value !== 'object') return typeof value
    return Array.isArray(value) ? 'array' : 'object'
  } catch {
    return 'object' // Array.isArray throws on a revoked Proxy
  }
}

export function describeValue(value: unknown): string {
  if (value === undefined) return 'undefined'
  if (typeof value === 'function') return 'a function'
  if (typeof value === 'bigint') return `${value}n`
  if (typeof value === 'symbol') return value.toString()
  try {
    const text = JSON.stringify(value)
    if (text === undefined) return String(value)
    return text.length > 200 ? text.slice(0, 200) + '…' : text
  } catch {
    try {
      return String(value)
    } catch {
      return `a value that cannot be shown (${safeTypeOf(value)})`
    }
  }
}

/**
 * `instanceof Error` fails across realms (DOMException from Node's realm inside a Jest
 * sandbox, errors from a worker), so an object with a string name and message counts too.
 */
export function isErrorLike(value: unknown): value is Error {
  if (value instanceof Error) return true
  if (typeof value !== 'object' || value === null) return false
  const { name, message } = value as { name?: unknown; message?: unknown }
  return typeof name === 'string' && typeof message === 'string' && Object.prototype.toString.call(value) !== '[object Object]'
}
