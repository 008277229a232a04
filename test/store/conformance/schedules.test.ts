/** The store conformance cases of `schedules` (src/testing/store-conformance/schedules.ts) on memory, SQLite and PostgreSQL. */
import { conformance } from './stores'

conformance('schedules')
