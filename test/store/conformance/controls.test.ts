/** The store conformance cases of `controls` (src/testing/store-conformance/controls.ts) on memory, SQLite and PostgreSQL. */
import { conformance } from './stores'

conformance('controls')
