/** The store conformance cases of `queue` (src/testing/store-conformance/queue.ts) on memory, SQLite and PostgreSQL. */
import { conformance } from './stores'

conformance('queue')
