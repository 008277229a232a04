/**
 * turnchart's SQL specifics on SQLite (backend.ts's `SqlDialect`), for every SQLite driver
 * (better-sqlite3 here, node:sqlite in node-sqlite/): ids are plain text (SQLite compares
 * text by bytes), migrations take the write lock first, and polling reads `data_version`.
 */
import { sql } from 'kysely'
import { NotATurnchartDatabaseError } from '../../core/errors'
import type { SqlDialect } from '../backend'

export const sqliteDialect: SqlDialect = {
  idType: 'text',
  async migrateExclusively(db, apply) {
    // BEGIN IMMEDIATE on one connection: two processes opening a new file migrate once.
    return db.connection().execute(async (conn) => {
      await sql`begin immediate`.execute(conn)
      try {
        const applied = await apply(conn)
        await sql`commit`.execute(conn)
        return applied
      } catch (error) {
        await sql`rollback`.execute(conn)
        throw error
      }
    })
  },
  async tableNames(db, label) {
    try {
      const { rows } = await sql<{ name: string }>`select name from sqlite_master where type = 'table'`.execute(db)
      return rows.map((r) => r.name)
    } catch (error) {
      // A file that is not SQLite at all ("file is not a database"; node:sqlite says it in errcode 26).
      const { code, errcode } = error as { code?: string; errcode?: number }
      if (code === 'SQLITE_NOTADB' || errcode === 26) throw new NotATurnchartDatabaseError(label, 'it is not a SQLite database')
      throw error
    }
  },
  async changeStamp(db) {
    // A counter of this connection's, moved by any other connection's commit (this process or another).
    const { rows } = await sql<{ data_version: number }>`pragma data_version`.execute(db)
    return String(rows[0]?.data_version ?? '')
  },
}
