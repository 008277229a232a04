/**
 * Checks of the engine methods' arguments. Each throws an `InvalidArgumentError` naming the
 * argument and showing the value, so a caller's mistake never surfaces as a raw `TypeError`
 * or a database driver's error.
 */
import { InvalidArgumentError } from './errors'

/** A lone UTF-16 surrogate: valid in a JS string, not in UTF-8 text columns (SQLite turns it into U+FFFD). */
const loneSurrogate = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

/**
 * Why `text` cannot be stored exactly in a text column (a NUL byte is refused by PostgreSQL, a
 * lone surrogate is replaced by SQLite), or undefined when it can.
 *
 * @example
 * columnTextProblem('ok') // undefined
 * columnTextProblem('a\u0000b') // 'contains a NUL character'
 */
export function columnTextProblem(text: string): string | undefined {
  if (text.includes('\u0000')) return 'contains a NUL character'
  if (loneSurrogate.test(text)) return 'contains a lone UTF-16 surrogate'
  return undefined
}

/**
 * An id argument (session, turn, tool call): a non-empty string that a text column can hold.
 *
 * @example
 * requireId('sessionId', session.id)
 */
export function requireId(argument: string, value: unknown): string {
  if (typeof value !== 'string' || value.length === 0) throw new InvalidArgumentError(argument, value, 'an id (a non-empty string)')
  const problem = columnTextProblem(value)
  if (problem) throw new InvalidArgumentError(argument, value, `an id; this string ${problem}`)
  return value
}

/**
 * `createSession`'s options: nothing, or `{ title }` with a string (or null) title that both
 * dialects store exactly.
 *
 * @example
 * sessionOptions({ title: 'Refactor' }) // { title: 'Refactor' }
 */
export function sessionOptions(value: unknown): { title: string | null; id?: unknown } & Record<string, unknown> {
  if (value === undefined) return { title: null }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new InvalidArgumentError('options', value, 'an object like { title }')
  for (const key of Object.keys(value)) {
    if (!sessionKeys.includes(key)) throw new InvalidArgumentError(`options.${key}`, (value as Record<string, unknown>)[key], `no such option (known: ${sessionKeys.join(', ')})`)
  }
  const { title, ...rest } = value as { title?: unknown } & Record<string, unknown>
  if (title === undefined || title === null) return { ...rest, title: null }
  if (typeof title !== 'string') throw new InvalidArgumentError('options.title', title, 'a string or null')
  const problem = columnTextProblem(title)
  // Refused rather than stored altered: PostgreSQL rejects NUL, SQLite replaces lone surrogates.
  if (problem) throw new InvalidArgumentError('options.title', title, `a title that can be stored exactly; this one ${problem}`)
  return { ...rest, title }
}

/** The session options: the title, checked here; `id`, `metadata` and the turns' defaults, checked by their owners. */
const sessionKeys = ['title', 'id', 'metadata', 'tenant', 'system', 'model', 'tools', 'settings', 'budget']

/**
 * A JSON object argument (a session's metadata): plain objects, arrays, strings, finite numbers,
 * booleans and null, nothing JSON would drop or change (a function, `undefined`, a Date, NaN).
 *
 * @example
 * requireJsonObject('options.metadata', { owner: 'user_42' })
 */
export function requireJsonObject(argument: string, value: unknown): Record<string, unknown> {
  if (!isPlainObject(value)) throw new InvalidArgumentError(argument, value, 'a JSON object, e.g. { owner: "user_42" }')
  const problem = jsonProblem(value, argument, new Set())
  if (problem) throw new InvalidArgumentError(problem.path, problem.value, 'JSON data (an object, array, string, finite number, boolean or null)')
  return value
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false
  const proto = Object.getPrototypeOf(value)
  return proto === Object.prototype || proto === null
}

function jsonProblem(value: unknown, path: string, seen: Set<object>): { path: string; value: unknown } | undefined {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return undefined
  if (typeof value === 'number') return Number.isFinite(value) ? undefined : { path, value }
  if (typeof value !== 'object' || (!Array.isArray(value) && !isPlainObject(value))) return { path, value }
  if (seen.has(value)) return { path, value: 'a cycle' }
  seen.add(value)
  const entries: Array<[string, unknown]> = Array.isArray(value) ? value.map((v, i) => [`[${i}]`, v]) : Object.entries(value).map(([k, v]) => [`.${k}`, v])
  for (const [key, item] of entries) {
    const found = jsonProblem(item, `${path}${key}`, seen)
    if (found) return found
  }
  seen.delete(value)
  return undefined
}

/**
 * A function argument (a listener).
 *
 * @example
 * requireFunction('listener', (event) => {})
 */
export function requireFunction<T extends (...args: never[]) => unknown>(argument: string, value: unknown): T {
  if (typeof value !== 'function') throw new InvalidArgumentError(argument, value, 'a function')
  return value as T
}

/**
 * An optional string argument (a deny reason).
 *
 * @example
 * optionalString('reason', undefined) // undefined
 */
export function optionalString(argument: string, value: unknown): string | undefined {
  if (value === undefined) return undefined
  if (typeof value !== 'string') throw new InvalidArgumentError(argument, value, 'a string or undefined')
  return value
}
