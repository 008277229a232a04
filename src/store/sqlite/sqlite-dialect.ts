/**
 * turnchart's SQL specifics on SQLite (backend.ts's `SqlDialect`), for every SQLite driver
 * (better-sqlite3 here, node:sqlite in node-sqlite/): ids are plain text (SQLite compares
 * text by bytes), migrations take the write lock first, the transition log is stored by its
 * key (`WITHOUT ROWID`), and polling reads `data_version`.
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
  async transitionsByKey(db) {
    // SQLite cannot change a table to WITHOUT ROWID: a new one, the rows copied, the old dropped.
    // Nothing references the log, so the rename leaves no dangling foreign key.
    await db.schema
      .createTable('turnchart_transitions_by_key')
      .addColumn('turn_id', 'text', (c) => c.notNull().references('turnchart_turns.id').onDelete('cascade'))
      .addColumn('seq', 'integer', (c) => c.notNull())
      .addColumn('from_state', 'text', (c) => c.notNull())
      .addColumn('event_type', 'text', (c) => c.notNull())
      .addColumn('payload', 'text', (c) => c.notNull())
      .addColumn('to_state', 'text', (c) => c.notNull())
      .addColumn('at', 'bigint', (c) => c.notNull())
      .addColumn('parts', 'text')
      .addColumn('storage_waits', 'text')
      .addPrimaryKeyConstraint('turnchart_transitions_pk', ['turn_id', 'seq'])
      .modifyEnd(sql`without rowid`)
      .execute()
    const columns = sql.raw('turn_id, seq, from_state, event_type, payload, to_state, at, parts, storage_waits')
    await sql`insert into turnchart_transitions_by_key (${columns}) select ${columns} from turnchart_transitions`.execute(db)
    await db.schema.dropTable('turnchart_transitions').execute()
    await db.schema.alterTable('turnchart_transitions_by_key').renameTo('turnchart_transitions').execute()
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
