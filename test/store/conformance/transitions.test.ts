/** The store conformance cases of `transitions` (src/testing/store-conformance/transitions.ts) on memory, SQLite and PostgreSQL. */
import { conformance } from './stores'

conformance('transitions')
