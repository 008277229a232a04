/** The store conformance cases of `turns, fencing, leases and claims` (src/testing/store-conformance/turns-fencing-leases-claims.ts) on memory, SQLite and PostgreSQL. */
import { conformance } from './stores'

conformance('turns, fencing, leases and claims')
