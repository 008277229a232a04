import { jsonCopy } from '../../src/core/json-copy'

describe('jsonCopy', () => {
  it('copies nested objects and arrays, so later changes to the original do not show', () => {
    const part = { id: 'prt_1', text: 'a', time: { start: 1 }, state: { status: 'running', input: { path: ['x'] } } }
    const copy = jsonCopy(part)
    part.time.start = 2
    part.state.input.path.push('y')
    expect(copy).toEqual({ id: 'prt_1', text: 'a', time: { start: 1 }, state: { status: 'running', input: { path: ['x'] } } })
  })

  it('keeps an own __proto__ key as a key, not a prototype', () => {
    const value = JSON.parse('{"__proto__": {"polluted": true}, "a": 1}')
    const copy = jsonCopy(value)
    expect(Object.getPrototypeOf(copy)).toBe(Object.prototype)
    expect(Object.keys(copy)).toEqual(['__proto__', 'a'])
    expect(({} as Record<string, unknown>).polluted).toBeUndefined()
  })

  it('copies what is not plain data (a Date, a Map) with structuredClone', () => {
    const when = new Date(5)
    const copy = jsonCopy({ when, seen: new Map([['k', 1]]) })
    expect(copy.when).not.toBe(when)
    expect(copy.when.getTime()).toBe(5)
    expect(copy.seen.get('k')).toBe(1)
  })
})
