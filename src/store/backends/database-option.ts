/** The `database` option's type: the union of what the registered backends take. */
import type { Kysely } from 'kysely'
import type { SqliteFileOption } from '../sqlite/sqlite-file-option'
import type { Store } from '../store'

export type { SqliteFileOption } from '../sqlite/sqlite-file-option'

/**
 * The `database` option: a SQLite path or `':memory:'`, a SQLite file as `{ file, shared?,
 * driver? }` (shared with the app's tables; `driver: 'node:sqlite'` for Node's built-in
 * SQLite), a postgres:// URL, a caller's Kysely instance (SQLite or PostgreSQL), or any object
 * implementing `Store` (a `MemoryStore`, or a third party's: docs/stores.md).
 */
export type DatabaseOption = string | SqliteFileOption | Kysely<any> | Store
