/** The store conformance cases of `circuits` (src/testing/store-conformance/circuits.ts) on memory, SQLite and PostgreSQL. */
import { conformance } from './stores'

conformance('circuits')
