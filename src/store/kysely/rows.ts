/**
 * What the Kysely aggregates share: the executor they run on (the database or a transaction)
 * and the conversions of column values that differ between dialects.
 */
import type { Kysely, Transaction } from 'kysely'
import type { TurnchartDatabase } from '../schema'

/** The database, or a transaction of it: every aggregate runs on either. */
export type Executor = Kysely<TurnchartDatabase> | Transaction<TurnchartDatabase>

/** A millisecond or count column as a number: PostgreSQL returns bigint columns as strings. */
export function num(value: unknown): number {
  return typeof value === 'number' ? value : Number(value)
}

/** A nullable JSON TEXT column, parsed (JSON is stored as TEXT and parsed here, explicitly). */
export function parseJsonOrNull<T>(value: string | null | undefined): T | null {
  return value ? (JSON.parse(value) as T) : null
}

