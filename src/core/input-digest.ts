/**
 * The digest an approval receipt keeps of the input it approved: the hex SHA-256 of the input's
 * canonical JSON (object keys sorted, recursively; arrays in order; no whitespace). Two inputs
 * that are the same JSON value have the same digest whatever the order of their keys, so the
 * digest the approver's input had is the one the input the tool runs with must have.
 */
import * as crypto from 'node:crypto'

/**
 * The canonical JSON text of `value`: as `JSON.stringify`, with every object's keys sorted
 * (by UTF-16 code units, as `Array.prototype.sort` does). `undefined` members are left out, as
 * JSON leaves them out; a top-level `undefined` is `null`.
 *
 * @example
 * canonicalJson({ b: 1, a: [{ d: 2, c: 3 }] }) // '{"a":[{"c":3,"d":2}],"b":1}'
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortedKeys(JSON.parse(JSON.stringify(value ?? null)) as unknown))
}

function sortedKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortedKeys)
  if (typeof value !== 'object' || value === null) return value
  const out: Record<string, unknown> = {}
  for (const key of Object.keys(value).sort()) {
    const item = sortedKeys((value as Record<string, unknown>)[key])
    // An own `__proto__` key (JSON.parse makes them) stays a key: assigning it would set the prototype.
    if (key === '__proto__') Object.defineProperty(out, key, { value: item, enumerable: true, writable: true, configurable: true })
    else out[key] = item
  }
  return out
}

/**
 * The hex SHA-256 of `value`'s canonical JSON.
 *
 * @example
 * inputDigest({ env: 'prod' }) === inputDigest(JSON.parse('{"env":"prod"}')) // true
 */
export function inputDigest(value: unknown): string {
  return sha256Hex(canonicalJson(value))
}

/**
 * The hex SHA-256 of `text` (UTF-8): Node's one-shot `crypto.hash` where it has it (20.12 and
 * later: no Hash object made, about half the CPU of `createHash` for a short text), else `createHash`.
 *
 * @example
 * sha256Hex('abc') // 'ba7816bf…'
 */
export function sha256Hex(text: string): string {
  return typeof crypto.hash === 'function' ? crypto.hash('sha256', text, 'hex') : crypto.createHash('sha256').update(text).digest('hex')
}
