/** The store conformance cases of `slots` (src/testing/store-conformance/slots.ts) on memory, SQLite and PostgreSQL. */
import { conformance } from './stores'

conformance('slots')
