/**
 * The assertions the conformance cases make, on `node:assert` and `node:util` only, so that the
 * cases run under any runner (jest, vitest, `node --test`) with none of its globals. Each matcher
 * means what jest's of the same name means (`toEqual` ignores properties set to undefined and
 * the classes of plain objects; `toMatchObject` checks a subset), and a failure throws
 * `AssertionError` with both values, which every runner reports.
 */
import { AssertionError } from 'node:assert'
import { inspect, isDeepStrictEqual } from 'node:util'

/** A value as `toEqual` compares it: own enumerable properties, those set to undefined dropped. */
function comparable(value: unknown): unknown {
  // Rebuilt in this realm: a driver (or jest's sandbox) may hand over arrays and objects of another one.
  if (Array.isArray(value)) return Array.from(value, comparable)
  if (value instanceof Set) return new Set([...value].map(comparable))
  if (value instanceof Map) return new Map([...value].map(([k, v]) => [k, comparable(v)]))
  if (value === null || typeof value !== 'object' || value instanceof Date || value instanceof RegExp || value instanceof Error) return value
  const out: Record<string, unknown> = {}
  for (const [key, item] of Object.entries(value)) if (item !== undefined) out[key] = comparable(item)
  return out
}

function matchesObject(actual: unknown, expected: unknown): boolean {
  if (Array.isArray(expected)) return Array.isArray(actual) && actual.length === expected.length && expected.every((item, i) => matchesObject(actual[i], item))
  if (expected !== null && typeof expected === 'object' && !(expected instanceof Date) && !(expected instanceof Set) && !(expected instanceof Map)) {
    if (actual === null || typeof actual !== 'object') return false
    return Object.entries(expected).every(([key, item]) => key in actual && matchesObject((actual as Record<string, unknown>)[key], item))
  }
  return isDeepStrictEqual(comparable(actual), comparable(expected))
}

function fail(matcher: string, actual: unknown, expected: unknown, negated = false): never {
  const message = `expect(received)${negated ? '.not' : ''}.${matcher}(expected)\n\nexpected: ${inspect(expected, { depth: 8 })}\nreceived: ${inspect(actual, { depth: 8 })}`
  throw new AssertionError({ message, actual, expected, operator: matcher })
}

export interface Matchers {
  toEqual(expected: unknown): void
  toStrictEqual(expected: unknown): void
  toBe(expected: unknown): void
  toBeUndefined(): void
  toBeNull(): void
  toHaveLength(length: number): void
  toMatch(pattern: RegExp | string): void
  toMatchObject(expected: object): void
  not: { toHaveProperty(key: string): void }
  rejects: { toThrow(expected?: string | RegExp | (new (...args: never[]) => Error)): Promise<void> }
  resolves: { toBeUndefined(): Promise<void> }
}

/**
 * @example
 * expect(await store.sessions.get(id)).toEqual(session)
 */
export function expect(actual: unknown): Matchers {
  return {
    toEqual: (expected) => void (isDeepStrictEqual(comparable(actual), comparable(expected)) || fail('toEqual', actual, expected)),
    toStrictEqual: (expected) => void (isDeepStrictEqual(actual, expected) || fail('toStrictEqual', actual, expected)),
    toBe: (expected) => void (Object.is(actual, expected) || fail('toBe', actual, expected)),
    toBeUndefined: () => void (actual === undefined || fail('toBeUndefined', actual, undefined)),
    toBeNull: () => void (actual === null || fail('toBeNull', actual, null)),
    toHaveLength: (length) => void ((actual as { length?: unknown } | null)?.length === length || fail('toHaveLength', actual, length)),
    toMatch: (pattern) => void ((typeof actual === 'string' && (typeof pattern === 'string' ? actual.includes(pattern) : pattern.test(actual))) || fail('toMatch', actual, pattern)),
    toMatchObject: (expected) => void (matchesObject(actual, expected) || fail('toMatchObject', actual, expected)),
    not: {
      toHaveProperty: (key) => void (!(actual !== null && typeof actual === 'object' && key in actual) || fail('toHaveProperty', actual, key, true)),
    },
    rejects: {
      async toThrow(expected) {
        let error: unknown
        try {
          await (actual as Promise<unknown>)
        } catch (e) {
          error = e
        }
        if (!(error instanceof Error)) return fail('rejects.toThrow', error, expected ?? 'an error')
        const ok =
          expected === undefined ||
          (typeof expected === 'string' ? error.message.includes(expected) : expected instanceof RegExp ? expected.test(error.message) : error instanceof expected)
        if (!ok) fail('rejects.toThrow', error, expected)
      },
    },
    resolves: {
      async toBeUndefined() {
        const value = await (actual as Promise<unknown>)
        if (value !== undefined) fail('resolves.toBeUndefined', value, undefined)
      },
    },
  }
}
