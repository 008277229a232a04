/** The store conformance cases of `messages and parts` (src/testing/store-conformance/messages-and-parts.ts) on memory, SQLite and PostgreSQL. */
import { conformance } from './stores'

conformance('messages and parts')
