/**
 * The conformance cases' assertions (src/testing/store-conformance/expect.ts, no runner's
 * globals): each passes where jest's matcher of the same name passes and fails where it fails.
 */
import { AssertionError } from 'node:assert'
import { expect as check } from '../../src/testing/store-conformance/expect'

const fails = (assertion: () => void) => expect(assertion).toThrow(AssertionError)

test('toEqual ignores undefined properties and classes, not values; toStrictEqual does not ignore them', () => {
  check({ a: 1, b: undefined, c: [{ d: new Set([1]) }] }).toEqual({ a: 1, c: [{ d: new Set([1]) }] })
  check(new (class Row { x = 1 })()).toEqual({ x: 1 })
  fails(() => check({ a: 1 }).toEqual({ a: 2 }))
  fails(() => check([1, 2]).toEqual([1]))
  fails(() => check({ a: 1, b: undefined }).toStrictEqual({ a: 1 }))
})

test('toMatchObject checks a subset, arrays element by element', () => {
  check({ a: 1, b: { c: 2, d: 3 } }).toMatchObject({ b: { c: 2 } })
  check({ list: [{ id: 1, x: 2 }] }).toMatchObject({ list: [{ id: 1 }] })
  fails(() => check({ a: 1 }).toMatchObject({ b: undefined }))
  fails(() => check({ list: [{ id: 1 }, { id: 2 }] }).toMatchObject({ list: [{ id: 1 }] }))
})

test('toBe, toBeUndefined, toBeNull, toHaveLength, toMatch, not.toHaveProperty', () => {
  check(NaN).toBe(NaN)
  fails(() => check({}).toBe({}))
  fails(() => check(null).toBeUndefined())
  fails(() => check(undefined).toBeNull())
  fails(() => check([1]).toHaveLength(2))
  check('duplicate key').toMatch(/unique|duplicate/i)
  fails(() => check('foreign key').toMatch(/unique/))
  check({ a: 1 }).not.toHaveProperty('b')
  fails(() => check({ b: undefined }).not.toHaveProperty('b'))
})

test('rejects.toThrow and resolves.toBeUndefined', async () => {
  await check(Promise.reject(new Error('rolled back'))).rejects.toThrow('rolled back')
  await expect(check(Promise.resolve(1)).rejects.toThrow()).rejects.toThrow(AssertionError)
  await expect(check(Promise.reject(new Error('other'))).rejects.toThrow('rolled back')).rejects.toThrow(AssertionError)
  await check(Promise.resolve(undefined)).resolves.toBeUndefined()
  await expect(check(Promise.resolve(0)).resolves.toBeUndefined()).rejects.toThrow(AssertionError)
})
