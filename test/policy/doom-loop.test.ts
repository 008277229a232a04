import { canonicalJson } from '../../src/core/input-digest'
import { defaultDoomLoopOptions as options, detectDoomLoop } from '../../src/policy/doom-loop'

const a = { tool: 'read', input: { path: 'a' } }
const b = { tool: 'read', input: { path: 'b' } }
const c = { tool: 'grep', input: { q: 'x' } }

test.each([
  ['three identical calls', [a, a, a], { kind: 'repeat', calls: [a], length: 3 }],
  ['identical input with keys in another order', [{ tool: 'x', input: { p: 1, q: 2 } }, { tool: 'x', input: { q: 2, p: 1 } }, { tool: 'x', input: { p: 1, q: 2 } }], { kind: 'repeat', length: 3 }],
  ['A,B,A,B', [c, a, b, a, b], { kind: 'cycle', calls: [a, b], length: 4 }],
  ['A,B,C,A,B,C', [a, b, c, a, b, c], { kind: 'cycle', calls: [a, b, c], length: 6 }],
])('%s is a loop', (_name, calls, expected) => {
  expect(detectDoomLoop(calls, options)).toMatchObject(expected)
})

test.each([
  ['two identical calls', [a, a]],
  ['A,B,A', [a, b, a]],
  ['A,A,B,B', [a, a, b, b]],
  ['all different', [a, b, c]],
  ['nothing', []],
])('%s is not a loop', (_name, calls) => {
  expect(detectDoomLoop(calls, options)).toBeNull()
})

test('thresholds are configurable, and off is off', () => {
  expect(detectDoomLoop([a, a], { ...options, repeats: 2 })).toMatchObject({ kind: 'repeat' })
  expect(detectDoomLoop([a, b, a, b], { ...options, cycleRepeats: 3 })).toBeNull()
  expect(detectDoomLoop([a, a, a], { ...options, policy: 'off' })).toBeNull()
})

test('canonical JSON sorts keys at every depth', () => {
  expect(canonicalJson({ b: [1, { d: 1, c: 2 }], a: null })).toBe('{"a":null,"b":[1,{"c":2,"d":1}]}')
})
