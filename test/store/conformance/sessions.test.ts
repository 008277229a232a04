/** The store conformance cases of `sessions` (src/testing/store-conformance/sessions.ts) on memory, SQLite and PostgreSQL. */
import { conformance } from './stores'

conformance('sessions')
