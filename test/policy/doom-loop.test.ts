import { canonicalJson } from '../../src/core/input-digest'
import { defaultDoomLoopOptions as options, detectDoomLoop, doomLoopWindow } from '../../src/policy/doom-loop'

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

test('only the last calls a loop can span are read: a long history gives the verdict of its tail, without reading the rest', () => {
  expect(doomLoopWindow(options)).toBe(8)
  expect(doomLoopWindow({ ...options, repeats: 12 })).toBe(12)
  // Older calls whose input cannot even be read (a getter that throws) are never looked at.
  const unreadable = { tool: 'read', get input(): unknown { throw new Error('read an old call') } }
  const older = Array.from({ length: 500 }, () => unreadable)
  const d = { tool: 'grep', input: { q: 'y' } }
  expect(detectDoomLoop([...older, d, c, d, c, a, b, a, b], options)).toEqual({ kind: 'cycle', calls: [a, b], length: 4 })
  expect(detectDoomLoop([...older, a, b, c, a, b, c, a, b], options)).toEqual({ kind: 'cycle', calls: [c, a, b], length: 6 })
  expect(detectDoomLoop([...older, d, a, b, c, d, a, b, c], options)).toEqual({ kind: 'cycle', calls: [d, a, b, c], length: 8 })
  expect(detectDoomLoop([...older, d, a, b, c, a, d, b, c], options)).toBeNull()
})

test('canonical JSON sorts keys at every depth', () => {
  expect(canonicalJson({ b: [1, { d: 1, c: 2 }], a: null })).toBe('{"a":null,"b":[1,{"c":2,"d":1}]}')
})

test('calls of two tools with one input object are different calls; the same calls checked again give the same verdict', () => {
  const shared = { path: 'a' }
  const read = { tool: 'read', input: shared }
  const write = { tool: 'write', input: shared }
  expect(detectDoomLoop([read, write, read], options)).toBeNull()
  expect(detectDoomLoop([write, read, write], options)).toBeNull()
  expect(detectDoomLoop([read, read, read], options)).toMatchObject({ kind: 'repeat', calls: [read] })
  expect(detectDoomLoop([write, write, write], options)).toMatchObject({ kind: 'repeat', calls: [write] })
})
