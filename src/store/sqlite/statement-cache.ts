/**
 * Prepared statements reused across queries on a better-sqlite3 handle. Kysely's SQLite driver
 * prepares every query it runs; a turn runs the same few statements hundreds of times, and
 * preparing is a fair share of their cost. Passed to `SqliteDialect` in place of the handle.
 */
import type { SqliteDriverStatement } from './sqlite-driver'

/** The part of a better-sqlite3 handle Kysely's `SqliteDialect` uses. */
export interface SqliteHandle {
  prepare(sql: string): SqliteDriverStatement
  close(): void
}

/**
 * Wraps `handle` so that `prepare` returns the statement prepared before for the same SQL. At
 * most `capacity` statements are kept (least recently used dropped first): multi-row inserts
 * make one SQL text per row count, and memory must not grow with them. A statement still
 * iterating (a streamed query) is never handed out twice: the caller gets a new one.
 *
 * @example
 * const db = new Kysely({ dialect: new SqliteDialect({ database: cachingStatements(new Database(file)) }) })
 */
export function cachingStatements(handle: SqliteHandle, capacity = 128): SqliteHandle {
  const cache = new Map<string, SqliteDriverStatement>()
  return {
    prepare(sql: string): SqliteDriverStatement {
      const cached = cache.get(sql)
      if (cached) {
        if (cached.busy) return handle.prepare(sql)
        // Re-inserted: a Map iterates in insertion order, so the first key is the least recently used.
        cache.delete(sql)
        cache.set(sql, cached)
        return cached
      }
      const statement = handle.prepare(sql)
      cache.set(sql, statement)
      if (cache.size > capacity) cache.delete(cache.keys().next().value as string)
      return statement
    },
    close() {
      cache.clear()
      return handle.close()
    },
  }
}
