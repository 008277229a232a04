import { newId } from '../../src/core/ids'

const shape = /^(prt|msg)_[0-9A-HJKMNP-TV-Z]{26}$/

test('an id is its prefix, 10 characters of time and 16 random ones (Crockford base32), the time readable back', () => {
  const at = Date.UTC(2030, 0, 2, 3, 4, 5, 678)
  const id = newId('prt', at)
  expect(id).toMatch(shape)
  const alphabet = '0123456789ABCDEFGHJKMNPQRSTVWXYZ'
  const time = [...id.slice(4, 14)].reduce((ms, character) => ms * 32 + alphabet.indexOf(character), 0)
  expect(time).toBe(at)
})

test('ids sort by creation: within one millisecond, across milliseconds, and when the clock goes back', () => {
  const base = Date.UTC(2031, 5, 6)
  const ids = [newId('msg', base), newId('msg', base), newId('msg', base), newId('msg', base + 1), newId('msg', base + 1), newId('msg', base - 5), newId('msg', base + 2)]
  for (const id of ids) expect(id).toMatch(shape)
  expect([...ids].sort()).toEqual(ids)
  expect(new Set(ids).size).toBe(ids.length)
  // A clock that went back keeps the last time: the id is after the one before it.
  expect(ids[5].slice(4, 14)).toBe(ids[4].slice(4, 14))
})

test('ids of different milliseconds do not share their random part', () => {
  const a = newId('prt', Date.UTC(2032, 0, 1))
  const b = newId('prt', Date.UTC(2032, 0, 1) + 1)
  expect(a.slice(14)).not.toBe(b.slice(14))
})
