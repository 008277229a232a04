/**
 * What opening a database gives: the Kysely instance with its dialect and the way to close it.
 * A file of its own so that the openers (sqlite/, postgres/) and the dispatch (open-database.ts)
 * share it without importing one another.
 */
import type { Kysely } from 'kysely'
import type { TurnchartDatabase } from './schema'

export type Dialect = 'sqlite' | 'postgres'

export interface OpenedDatabase {
  db: Kysely<TurnchartDatabase>
  dialect: Dialect
  /** Throws when the database can no longer be written safely (a SQLite file deleted under us). */
  verify?: () => void
  /** Closes the connection (or pool) when turnchart opened it; a caller's Kysely instance stays open. */
  close(): Promise<void>
}
