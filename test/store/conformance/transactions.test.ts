/** The store conformance cases of `transactions` (src/testing/store-conformance/transactions.ts) on memory, SQLite and PostgreSQL. */
import { conformance } from './stores'

conformance('transactions')
