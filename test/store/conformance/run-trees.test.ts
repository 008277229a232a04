/** The store conformance cases of `run trees` (src/testing/store-conformance/run-trees.ts) on memory, SQLite and PostgreSQL. */
import { conformance } from './stores'

conformance('run trees')
