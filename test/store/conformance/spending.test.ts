/** The store conformance cases of `spending` (src/testing/store-conformance/spending.ts) on memory, SQLite and PostgreSQL. */
import { conformance } from './stores'

conformance('spending')
