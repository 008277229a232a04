/**
 * The base of turnchart's errors: a stable `name`, the fields a caller needs, a `toJSON()` that
 * gives the JSON-serialisable record stored on an assistant message, and a static `isInstance`
 * that works across copies of the package (no `instanceof`).
 */
import { redactSecrets } from '../secrets/redact-secrets'

/** The stored and published form of an error: `{ name, message, ...fields }`. */
export interface SerializedError {
  name: string
  message: string
  [field: string]: unknown
}

const marker = Symbol.for('turnchart.error')

/** Base class: every turnchart error carries a marker so `isInstance` survives bundling twice. */
export abstract class TurnchartError extends Error {
  private readonly [marker] = true
  abstract override readonly name: string

  /** True when `value` is any turnchart error. */
  static isTurnchartError(value: unknown): value is TurnchartError {
    if (typeof value !== 'object' || value === null) return false
    // A value a tool threw may be a Proxy whose traps throw (or a revoked one): not ours.
    try {
      return (value as Record<symbol, unknown>)[marker] === true
    } catch {
      return false
    }
  }

  /** The record stored on a message and sent in events. */
  toJSON(): SerializedError {
    const fields: Record<string, unknown> = {}
    for (const [key, value] of Object.entries(this)) {
      if (key !== 'cause' && value !== undefined) fields[key] = value
    }
    // Credentials in any field (a provider body echoing the request headers) never leave as a record.
    return redactSecrets.value({ ...fields, name: this.name, message: this.message })
  }
}

export function isNamed<T extends TurnchartError>(name: string) {
  return (value: unknown): value is T => TurnchartError.isTurnchartError(value) && value.name === name
}
