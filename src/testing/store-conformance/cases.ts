/**
 * How the conformance cases are written: each aggregate's file defines its cases once against
 * `Store` (`defineCases`), as data; `storeConformance` (index.ts) binds them to a store's
 * initializer. No runner's globals are used.
 */
import type { Store } from '../../store/store'

/** What a case may know of the store under test. */
export interface StoreTraits {
  /** Calls and transactions run one at a time (a call made while a transaction runs waits for it). */
  serialises: boolean
}

/** Adds a case: its title and its body, given a fresh, empty store. */
export type AddCase = (title: string, body: (store: Store) => Promise<void>) => void

export interface CaseGroup {
  suite: string
  define(it: AddCase, traits: StoreTraits): void
}

/**
 * @example
 * export const sessionCases = defineCases('sessions', (it) => {
 *   it('a session comes back as inserted', async (store) => { ... })
 * })
 */
export function defineCases(suite: string, define: CaseGroup['define']): CaseGroup {
  return { suite, define }
}
