/**
 * Models' circuits (the `circuits` capability: one circuit per model across engines): none
 * before the first put, written only over the version before it (the first put inserts, a second
 * insert or a stale update is refused), listed by model, undone with their transaction; a
 * store's change mark moves with each put.
 * A store without the capability passes each case (each engine then keeps its own).
 */
import { rejection } from './fixtures'
import { defineCases } from './cases'
import type { CircuitRecord, CircuitStore, Store } from '../../store/store'
import { expect } from './expect'

const row = (model: string, version: number, fields: Partial<CircuitRecord> = {}): CircuitRecord => ({ model, failures: version, since: 1_000, openUntil: null, probeUntil: null, heldUntil: null, admitted: [], version, ...fields })

/** The case's body, run only on a store that keeps circuits. */
const withCircuits = (body: (store: Store, circuits: CircuitStore) => Promise<void>) => async (store: Store) => {
  if (store.circuits) await body(store, store.circuits)
}

export const circuitsCases = defineCases('circuits', (it) => {
  it(
    'a model has no circuit before its first put; the first put inserts it, a second insert is refused',
    withCircuits(async (_store, circuits) => {
      expect(await circuits.get('primary')).toBeUndefined()
      expect(await circuits.put(row('primary', 1))).toBe(true)
      expect(await circuits.put(row('primary', 1, { failures: 9 }))).toBe(false)
      expect(await circuits.get('primary')).toEqual(row('primary', 1))
    }),
  )

  it(
    'a put writes over the version before it only (two engines counting one failure: one write stands); times far past 2^31 and the admitted seconds round-trip',
    withCircuits(async (_store, circuits) => {
      await circuits.put(row('primary', 1))
      const opened = row('primary', 2, { openUntil: 1_800_000_000_000, probeUntil: 1_800_000_030_000, heldUntil: 1_800_000_002_000, admitted: [{ second: 1_800_000_001_000, requests: 3, tokens: 4_200 }] })
      expect(await circuits.put(opened)).toBe(true)
      expect(await circuits.put(row('primary', 2, { failures: 7 }))).toBe(false)
      expect(await circuits.put(row('primary', 4))).toBe(false)
      expect(await circuits.get('primary')).toEqual(opened)
    }),
  )

  it(
    'circuits are listed by model',
    withCircuits(async (_store, circuits) => {
      await circuits.put(row('zeta', 1))
      await circuits.put(row('alpha', 1, { openUntil: 5_000 }))
      expect((await circuits.list()).map((r) => [r.model, r.openUntil])).toEqual([
        ['alpha', 5_000],
        ['zeta', null],
      ])
    }),
  )

  it(
    'a store that marks its circuits\' changes (`changeMark`, when it can tell) moves the mark with each put, directly or in a transaction; reads leave it as it is',
    withCircuits(async (store, circuits) => {
      const mark = circuits.changeMark?.bind(circuits)
      // (undefined: the store cannot tell now, e.g. PostgreSQL's without a listener: every step reads)
      if (!mark || mark() === undefined) return
      const before = mark()
      await circuits.get('primary')
      await circuits.list()
      expect(mark()).toBe(before)
      await circuits.put(row('primary', 1))
      const afterPut = mark()
      expect(afterPut === before).toBe(false)
      await store.transaction((tx) => tx.circuits!.put(row('primary', 2)))
      expect(mark() === afterPut).toBe(false)
    }),
  )

  it(
    "a put is undone with its transaction",
    withCircuits(async (store, circuits) => {
      await rejection(
        store.transaction(async (tx) => {
          await tx.circuits!.put(row('primary', 1))
          throw new Error('rolled back')
        }),
      )
      expect(await circuits.get('primary')).toBeUndefined()
    }),
  )
})
