/**
 * Run trees' spending (the `spending` capability: one budget across engines): nothing before
 * the first add, adds summed (cost a fraction), a root turn required, undone with its
 * transaction, deleted with the root's session, adds from concurrent transactions all kept, and
 * an add bounded by `maxSteps` refused when it would pass it, concurrent ones judged one after
 * the other.
 * A store without the capability passes each case (each engine then counts its own).
 */
import { rejection, sessionWithTurn } from './fixtures'
import { defineCases } from './cases'
import type { SpendingStore, Store } from '../../store/store'
import { expect } from './expect'

const spent = (input: number, output: number, cost: number, steps: number) => ({ tokens: { input, output }, cost, steps })

/** The case's body, run only on a store that keeps spending. */
const withSpending = (body: (store: Store, spending: SpendingStore) => Promise<void>) => async (store: Store) => {
  if (store.spending) await body(store, store.spending)
}

export const spendingCases = defineCases('spending', (it) => {
  it(
    "a tree's spending is undefined before its first add; adds are summed, a fractional cost too",
    withSpending(async (store, spending) => {
      const { turn } = await sessionWithTurn(store)
      expect(await spending.get(turn.id)).toBeUndefined()
      await spending.add(turn.id, spent(10, 5, 0.125, 1), 1)
      await spending.add(turn.id, spent(7, 3, 0.25, 2), 2)
      expect(await spending.get(turn.id)).toEqual(spent(17, 8, 0.375, 3))
    }),
  )

  it(
    "an add needs its root turn (the error says foreign key), and is undone with its transaction",
    withSpending(async (store, spending) => {
      expect((await rejection(spending.add('trn_missing', spent(1, 1, 0, 1), 1))).message).toMatch(/foreign key/i)
      const { turn } = await sessionWithTurn(store)
      await spending.add(turn.id, spent(1, 1, 0, 1), 1)
      await rejection(
        store.transaction(async (tx) => {
          await tx.spending!.add(turn.id, spent(100, 100, 1, 10), 2)
          throw new Error('rolled back')
        }),
      )
      expect(await spending.get(turn.id)).toEqual(spent(1, 1, 0, 1))
    }),
  )

  it(
    "deleting the root's session deletes its tree's spending",
    withSpending(async (store, spending) => {
      const { session, turn } = await sessionWithTurn(store)
      await spending.add(turn.id, spent(1, 2, 0.5, 1), 1)
      expect(await store.sessions.delete(session.id)).toBe(true)
      expect(await spending.get(turn.id)).toBeUndefined()
    }),
  )

  it(
    'adds from concurrent transactions (two engines spending one tree) are all kept',
    withSpending(async (store, spending) => {
      const { turn } = await sessionWithTurn(store)
      await Promise.all(Array.from({ length: 8 }, (_, i) => store.transaction((tx) => tx.spending!.add(turn.id, spent(1, 2, 0.5, 1), i))))
      expect(await spending.get(turn.id)).toEqual(spent(8, 16, 4, 8))
    }),
  )
})

/** Adds bounded by `maxSteps` (one budget's steps across engines): refused past the bound, concurrent ones judged one after the other. */
export const boundedSpendingCases = defineCases('spending', (it) => {
  it(
    'an add bounded by maxSteps is refused when the steps would pass it (nothing added), first add included',
    withSpending(async (store, spending) => {
      const { turn } = await sessionWithTurn(store)
      expect(await spending.add(turn.id, spent(0, 0, 0, 3), 1, 2)).toBe(false)
      expect(await spending.get(turn.id)).toBeUndefined()
      expect(await spending.add(turn.id, spent(1, 1, 0, 2), 1, 2)).toBe(true)
      expect(await spending.add(turn.id, spent(5, 5, 1, 1), 2, 2)).toBe(false)
      expect(await spending.get(turn.id)).toEqual(spent(1, 1, 0, 2))
      // Unbounded, an add (tokens after a call) is kept whatever the steps.
      await spending.add(turn.id, spent(5, 5, 1, 0), 3)
      expect(await spending.get(turn.id)).toEqual(spent(6, 6, 1, 2))
    }),
  )

  it(
    'bounded adds from concurrent transactions (two engines reserving at the same moment) pass the bound none',
    withSpending(async (store, spending) => {
      const { turn } = await sessionWithTurn(store)
      await spending.add(turn.id, spent(0, 0, 0, 1), 1)
      const added = await Promise.all(Array.from({ length: 8 }, (_, i) => store.transaction((tx) => tx.spending!.add(turn.id, spent(0, 0, 0, 1), i, 5))))
      expect(added.filter((a) => a === true)).toHaveLength(4)
      expect(await spending.get(turn.id)).toEqual(spent(0, 0, 0, 5))
    }),
  )
})
