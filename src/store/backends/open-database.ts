/**
 * Turns the `database` option into what its backend opens (registry.ts): a Kysely database with
 * its SQL specifics and capabilities, or a store of its own. Only the dispatch is here, and the
 * errors of a value no backend takes.
 */
import { InvalidOptionError } from '../../core/errors'
import type { OpenedDatabase, OpenedOwnStore, OpenSettings, StoreBackend } from '../backend'
import { adapterName, isKysely } from '../kysely/kysely-instance'
import { redactUrl } from '../redact-url'
import type { DatabaseOption } from './database-option'
import { backendFor, databaseForms } from './registry'

export type { DatabaseOption, SqliteFileOption } from './database-option'

/**
 * Opens `option` (default `':memory:'`) with the backend that takes it.
 *
 * PostgreSQL URLs accept two query parameters of turnchart's own, removed before the URL is
 * handed to `pg`: `schema` (turnchart's tables go into that schema, created by the migration
 * if missing; sets `search_path` on every connection) and `pool_max` (the pool size, default
 * 10). Every other parameter is `pg`'s (`sslmode`, `options=-c search_path=x`, ...).
 *
 * @example
 * const { backend, opened } = openDatabase('./agent.db')
 * const pg = openDatabase('postgres://app@db.internal:5432/app?schema=agent&pool_max=20')
 */
export function openDatabase(option: DatabaseOption | undefined, settings: OpenSettings = {}): { backend: StoreBackend; opened: OpenedDatabase | OpenedOwnStore } {
  const value = option ?? ':memory:'
  const backend = value === '' ? undefined : backendFor(value)
  if (!backend) throw refusal(value)
  return { backend, opened: backend.open(value, settings) }
}

/** The error of a value no backend takes, saying what is wrong with it where that is known. */
function refusal(value: unknown): InvalidOptionError {
  if (typeof value === 'string') {
    const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(value)
    if (scheme) return new InvalidOptionError('database', redactUrl(value), `${databaseForms} (the URL scheme ${scheme[1]}: is not supported)`)
  }
  if (isKysely(value)) return new InvalidOptionError('database', `a Kysely instance on ${adapterName(value)}`, databaseForms)
  if (typeof value === 'object' && value !== null && 'file' in value && 'driver' in value) {
    return new InvalidOptionError('database.driver', (value as { driver: unknown }).driver, "'better-sqlite3' or 'node:sqlite'")
  }
  return new InvalidOptionError('database', value, databaseForms)
}
