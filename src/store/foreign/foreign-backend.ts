/**
 * A store of the caller's as the `database` option: any object implementing the store contract
 * (store.ts; docs/stores.md says what it must guarantee), a `MemoryStore` included. turnchart
 * neither opens nor closes it (other engines sharing it go on), runs no migration on it, and
 * finds none of the optional capabilities: the engine polls.
 */
import { InvalidOptionError } from '../../core/errors'
import type { StoreBackend } from '../backend'
import type { Store } from '../store'
import { missingStoreMethod, storeMethods } from '../store-methods'

export const foreignBackend: StoreBackend = {
  name: 'store',
  accepts(database) {
    if (typeof database !== 'object' || database === null || typeof (database as Store).transaction !== 'function') return false
    if (!Object.keys(storeMethods).every((aggregate) => aggregate in database)) return false
    const missing = missingStoreMethod(database)
    if (missing) throw new InvalidOptionError('database', `a store without ${missing}()`, 'an object implementing every method of the Store contract (docs/stores.md)')
    return true
  },
  open: (database) => ({ store: database as Store, close: async () => {} }),
}
