/**
 * `MemoryStore` as the `database` option: the caller's, as it is (closing an engine does
 * nothing to it, so other engines sharing it go on). Nothing stored survives the process.
 */
import type { StoreBackend } from '../backend'
import { MemoryStore } from './memory-store'

export const memoryBackend: StoreBackend = {
  name: 'memory',
  accepts: (database) => database instanceof MemoryStore,
  open: (database) => ({ store: database as MemoryStore, close: async () => {} }),
}
