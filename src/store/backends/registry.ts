/**
 * The backends turnchart knows, one line each, asked in this order: the first whose `accepts`
 * takes a `database` value opens it. Adding a backend is a folder under store/ exporting a
 * `StoreBackend` (backend.ts) and a line here (docs/architecture.md walks node:sqlite through it).
 */
import type { ReadOnlyOpening, StoreBackend } from '../backend'
import { foreignBackend } from '../foreign/foreign-backend'
import { memoryBackend } from '../memory/memory-backend'
import { nodeSqliteBackend } from '../node-sqlite/node-sqlite-backend'
import { postgresBackend } from '../postgres/postgres-backend'
import { sqliteBackend } from '../sqlite/sqlite-backend'

export const backends: readonly StoreBackend[] = [
  memoryBackend,
  foreignBackend,
  postgresBackend,
  nodeSqliteBackend,
  sqliteBackend,
]

/** What the `database` option takes, for the error of a value no backend takes. */
export const databaseForms =
  "a file path, ':memory:', { file, shared, driver: 'better-sqlite3' | 'node:sqlite' }, a postgres:// URL, a Kysely instance on SQLite or PostgreSQL, or an object implementing Store (a MemoryStore)"

/** The backend that takes `database`, if any. */
export function backendFor(database: unknown): StoreBackend | undefined {
  return backends.find((backend) => backend.accepts(database))
}

/** The read-only opening of the backend that takes `location` (a path or URL), if any. */
export function readOnlyOpeningFor(location: string): ReadOnlyOpening | undefined {
  return backends.find((backend) => backend.readOnly?.accepts(location))?.readOnly
}

/** Whether some backend listens on `url` (a `notifications` URL). */
export function listenedOn(url: string): boolean {
  return backends.some((backend) => backend.listensOn?.(url) === true)
}
