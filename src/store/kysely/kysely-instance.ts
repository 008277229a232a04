/**
 * A caller's Kysely instance, recognised by its shape, and its dialect, by its adapter: a
 * backend takes the instances whose adapter is its own (Kysely's `SqliteAdapter`,
 * `PostgresAdapter`); an instance of another dialect is refused rather than taken for one of them.
 */
import { PostgresAdapter, SqliteAdapter, type Kysely } from 'kysely'

export function isKysely(value: unknown): value is Kysely<any> {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as Kysely<any>).selectFrom === 'function' &&
    typeof (value as Kysely<any>).transaction === 'function' &&
    typeof (value as Kysely<any>).getExecutor === 'function'
  )
}

const adapters = { sqlite: SqliteAdapter, postgres: PostgresAdapter }

/**
 * Whether `value` is a Kysely instance whose adapter is Kysely's adapter of `dialect` (or one
 * extending it). An app with its own copy of kysely has its own adapter classes: the class name
 * is compared then.
 */
export function isKyselyOn(value: unknown, dialect: keyof typeof adapters): value is Kysely<any> {
  if (!isKysely(value)) return false
  const adapter = value.getExecutor().adapter
  return adapter instanceof adapters[dialect] || adapter.constructor.name === adapters[dialect].name
}

/** The name of a Kysely instance's adapter class, for the error that refuses it. */
export function adapterName(value: Kysely<any>): string {
  return value.getExecutor().adapter.constructor.name
}
