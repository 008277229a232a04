/**
 * Opens PostgreSQL from a URL with `pg` (an optional peer dependency, loaded only here): the
 * pool, turnchart's own URL parameters (`schema` sets `search_path`, `pool_max`), the
 * read-only mode of the CLI, and the idle-in-transaction timeout that bounds a stalled engine.
 */
import { Kysely, PostgresDialect } from 'kysely'
import { InvalidOptionError } from '../../core/errors'
import type { OpenedDatabase } from '../backend'
import { redactUrl } from '../redact-url'
import { postgresDialect } from './postgres-dialect'
import { storeSchema } from './store-schema'
import type { TurnchartDatabase } from '../schema'

interface PgModule {
  Pool: new (config: Record<string, unknown>) => PgPool
  types: { getTypeParser(oid: number, format?: string): (value: string) => unknown }
}
interface PgPool {
  on(event: 'error', listener: (error: Error) => void): unknown
  on(event: 'connect', listener: (client: { on(event: 'error', listener: (error: Error) => void): unknown }) => void): unknown
  end(): Promise<void>
}

/** `pg`, loaded only when a PostgreSQL URL is given. Exported for tests. */
export const pgLoader = {
  load(): PgModule {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return require('pg') as PgModule
  },
}

export function isPostgresUrl(value: string): boolean {
  return /^postgres(ql)?:\/\//i.test(value)
}

const schemaName = /^[a-z_][a-z0-9_]{0,62}$/

/** Appends `-c name=value` to the URL's `options` parameter (applied at connection start-up, before any query). */
function addSetting(url: URL, setting: string): void {
  const options = url.searchParams.get('options')
  url.searchParams.set('options', `${options ? options + ' ' : ''}-c ${setting}`)
}

/**
 * A `postgres://` URL as `pg` takes it: turnchart's own parameters (`schema`, `pool_max`)
 * removed, the schema applied as `search_path` and the `mode`'s settings at connection start-up.
 * Invalid values are an `InvalidOptionError` naming `option` (the URL in it has no password).
 *
 * @example
 * postgresConnection('postgres://app@db/app?schema=agent&pool_max=20') // { connectionString: 'postgres://app@db/app?options=-c+search_path%3Dagent', poolMax: 20 }
 */
export function postgresConnection(
  value: string,
  mode: { readOnly?: boolean; idleInTransactionTimeoutMs?: number } = {},
  option = 'database',
): { connectionString: string; poolMax: number } {
  let url: URL
  try {
    url = new URL(value)
  } catch {
    throw new InvalidOptionError(option, redactUrl(value), 'a valid postgres:// URL')
  }
  const schema = url.searchParams.get('schema')
  const poolMax = url.searchParams.get('pool_max')
  url.searchParams.delete('schema')
  url.searchParams.delete('pool_max')
  if (schema !== null) {
    if (!schemaName.test(schema)) {
      throw new InvalidOptionError(option, redactUrl(value), 'a URL whose schema parameter is a schema name of lowercase letters, digits and _')
    }
    // `pg` takes `options` from the URL.
    addSetting(url, `search_path=${schema}`)
  }
  if (mode.readOnly) addSetting(url, 'default_transaction_read_only=on')
  if (mode.idleInTransactionTimeoutMs !== undefined) addSetting(url, `idle_in_transaction_session_timeout=${Math.round(mode.idleInTransactionTimeoutMs)}`)
  let max = 10
  if (poolMax !== null) {
    max = Number(poolMax)
    if (!Number.isInteger(max) || max < 1) throw new InvalidOptionError(option, redactUrl(value), 'a URL whose pool_max parameter is an integer >= 1')
  }
  return { connectionString: url.toString(), poolMax: max }
}

/**
 * A pool on a `postgres://` or `postgresql://` URL.
 *
 * @param mode `readOnly`: every transaction of every connection read-only, whatever the caller
 *   runs (the CLI). `idleInTransactionTimeoutMs`: a transaction left idle longer is ended by the
 *   server, so an engine stalled inside one cannot hold the turn's row lock past its lease.
 *
 * @example
 * const { db, close } = openPostgres('postgres://app@db.internal:5432/app?schema=agent&pool_max=20')
 */
export function openPostgres(value: string, mode: { readOnly?: boolean; idleInTransactionTimeoutMs?: number } = {}): OpenedDatabase {
  const { connectionString, poolMax: max } = postgresConnection(value, mode)

  let pg: PgModule
  try {
    pg = pgLoader.load()
  } catch (error) {
    if ((error as { code?: string }).code !== 'MODULE_NOT_FOUND') throw error
    throw new InvalidOptionError(
      'database',
      redactUrl(value),
      'a PostgreSQL URL with the optional peer dependency `pg` installed (run `npm install pg`), or a SQLite path',
    )
  }
  const pool = new pg.Pool({
    connectionString,
    max,
    // int8 (bigint: our epoch-ms columns) as numbers; the repository copes with strings too,
    // for Kysely instances created by the caller.
    types: { getTypeParser: (oid: number, format?: string) => (oid === 20 ? Number : pg.types.getTypeParser(oid, format)) },
  })
  // An idle client that loses its connection emits 'error' on the pool; without a listener
  // Node would crash. The pool drops that client; the next query reports any real failure.
  pool.on('error', () => {})
  // A client checked out in a transaction that the server ends (idle_in_transaction_session_timeout,
  // a restart) emits 'error' too; its pending or next query fails, and that failure is reported.
  pool.on('connect', (client) => client.on('error', () => {}))
  const db = new Kysely<TurnchartDatabase>({ dialect: new PostgresDialect({ pool: pool as never }) })
  return { db, sql: postgresDialect, schema: () => storeSchema(db), close: () => db.destroy() }
}
