/**
 * `storeConformance`: the store contract's conformance suite as data. Given an initializer of a
 * store (one of turnchart's, or a store of your own: docs/stores.md), it returns the cases, each
 * with its name and a `run()` that creates a fresh store, runs the case on it and destroys it.
 * Any runner runs them (`test(c.name, c.run)` in jest, vitest or `node:test`): the cases use no
 * runner's globals, only `node:assert`.
 */
import type { Store } from '../../store/store'
import type { CaseGroup } from './cases'
import { circuitsCases } from './circuits'
import { controlsCases } from './controls'
import { messagesAndPartsCases } from './messages-and-parts'
import { queueCases } from './queue'
import { runTreesCases } from './run-trees'
import { schedulesCases } from './schedules'
import { sessionsCases } from './sessions'
import { boundedSpendingCases, spendingCases } from './spending'
import { slotsCases } from './slots'
import { transactionsCases } from './transactions'
import { transitionsCases } from './transitions'
import { turnsFencingLeasesClaimsCases } from './turns-fencing-leases-claims'

/** How to make a fresh, empty store of the implementation under test, and dispose of it. */
export interface StoreInitializer<S extends Store = Store> {
  /** Put in front of every case's name. */
  name: string
  /** A fresh, empty store (a new file, a new schema, a new object). */
  create(): Promise<S>
  /** Disposes of a store `create` made (closes it, removes its file or schema). */
  destroy(store: S): Promise<void>
  /**
   * True when calls and transactions run one at a time, as on SQLite's one connection and in
   * `MemoryStore` (a call made while a transaction runs waits for it); false (the default) when
   * they run at once and each reads what was committed before it, as on PostgreSQL's pool.
   */
  serialises?: boolean
}

/** One case of the suite. */
export interface StoreConformanceCase {
  /** `<initializer>: <suite>: <title>`. */
  name: string
  /** The aggregate it is about: `sessions`, `messages and parts`, `turns, fencing, leases and claims`, `transitions`, `queue`, `controls`, `run trees`, `spending`, `slots`, `schedules`, `circuits`, `transactions`. */
  suite: string
  title: string
  /** Creates a store, runs the case on it, destroys the store (also when the case fails); rejects with the failure. */
  run(): Promise<void>
}

const groups: CaseGroup[] = [
  sessionsCases,
  messagesAndPartsCases,
  turnsFencingLeasesClaimsCases,
  transitionsCases,
  queueCases,
  controlsCases,
  runTreesCases,
  spendingCases,
  boundedSpendingCases,
  slotsCases,
  schedulesCases,
  circuitsCases,
  transactionsCases,
]

/**
 * @example
 * // jest or vitest
 * for (const c of storeConformance({ name: 'mine', create: () => openMyStore(), destroy: (s) => s.close() })) test(c.name, c.run)
 * // node --test
 * import test from 'node:test'
 * for (const c of storeConformance(initializer)) test(c.name, c.run)
 */
export function storeConformance<S extends Store>(initializer: StoreInitializer<S>): StoreConformanceCase[] {
  const cases: StoreConformanceCase[] = []
  const traits = { serialises: initializer.serialises ?? false }
  for (const group of groups) {
    group.define((title, body) => {
      cases.push({
        name: `${initializer.name}: ${group.suite}: ${title}`,
        suite: group.suite,
        title,
        async run() {
          const store = await initializer.create()
          try {
            await body(store)
          } finally {
            await initializer.destroy(store)
          }
        },
      })
    }, traits)
  }
  return cases
}
