/**
 * turnchart's SQL specifics on PostgreSQL (backend.ts's `SqlDialect`): ids in the "C"
 * collation, migrations under an advisory lock in the schema they create, the notify triggers,
 * and the current snapshot as the change stamp.
 */
import { sql, type Kysely } from 'kysely'
import type { SqlDialect } from '../backend'
import { createNotifyTriggers, notifyCircuits, notifyReleasedTurns } from './notify-triggers'

export const postgresDialect: SqlDialect = {
  // The "C" collation: ordering and `>=` on ids compare bytes (ids sort by creation time) whatever the database's locale.
  idType: sql`text collate "C"`,
  async migrateExclusively(db, apply) {
    return db.transaction().execute(async (trx) => {
      const schema = await creationSchema(trx)
      // One migrator at a time per schema, across processes; released at commit.
      await sql`select pg_advisory_xact_lock(hashtext(${'turnchart_migrations:' + schema.name}))`.execute(trx)
      if (!schema.exists) await sql`create schema if not exists ${sql.id(schema.name)}`.execute(trx)
      return apply(trx)
    })
  },
  createNotifyTriggers,
  notifyReleasedTurns,
  notifyCircuits,
  async tableNames(db) {
    const { rows } = await sql<{ name: string }>`select table_name as name from information_schema.tables where table_schema = current_schema()`.execute(db)
    return rows.map((r) => r.name)
  },
  async changeStamp(db) {
    // `xmin:xmax:running ids`: it moves when a writing transaction starts or ends anywhere on the server.
    const { rows } = await sql<{ stamp: string }>`select pg_current_snapshot()::text as stamp`.execute(db)
    return String(rows[0]?.stamp ?? '')
  },
}

/**
 * The schema turnchart's tables are created in on PostgreSQL: the first schema of the
 * connection's `search_path` (set by `?schema=` on a URL, `options=-c search_path=...`, or the
 * caller's own connection settings). When that schema does not exist yet, `current_schema()`
 * is null and the name is read from `search_path` so the migration can create it.
 */
async function creationSchema(db: Kysely<any>): Promise<{ name: string; exists: boolean }> {
  const { rows } = await sql<{ current: string | null; path: string; user: string }>`
    select current_schema() as current, current_setting('search_path') as path, current_user as user`.execute(db)
  const row = rows[0]
  if (row.current) return { name: row.current, exists: true }
  const first = splitSearchPath(row.path)[0]
  if (!first) throw new Error('turnchart migrations: the PostgreSQL search_path names no schema to create the tables in')
  return { name: first === '$user' ? row.user : first, exists: false }
}

/** `a, "B c", $user` → ['a', 'B c', '$user'] (quoted names keep their case, others fold). */
export function splitSearchPath(path: string): string[] {
  const names: string[] = []
  const pattern = /\s*(?:"((?:[^"]|"")*)"|([^,\s]+))\s*(?:,|$)/gy
  let match: RegExpExecArray | null
  while (pattern.lastIndex < path.length && (match = pattern.exec(path)) !== null) {
    if (match[1] !== undefined) names.push(match[1].replace(/""/g, '"'))
    else names.push(match[2].toLowerCase())
  }
  return names
}


