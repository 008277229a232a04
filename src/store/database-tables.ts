/**
 * The tables a database holds, and what they say about whose database it is: turnchart's
 * (`turnchart_*` tables), a new one (no table), or another app's (tables, none of them
 * turnchart's). Read by the CLI's read-only store, and by the engine's SQLite opener before it
 * sets a pragma (journal_mode = WAL alone would change another app's file).
 */
import { sql, type Kysely } from 'kysely'
import { NotATurnchartDatabaseError } from '../core/errors'
import type { Dialect } from './opened-database'

/**
 * The names of the tables in the database (SQLite) or in the connection's schema (PostgreSQL).
 * A file that is not SQLite at all is a `NotATurnchartDatabaseError` naming `label`.
 */
export async function tableNames(db: Kysely<any>, dialect: Dialect, label: string): Promise<string[]> {
  try {
    const { rows } =
      dialect === 'postgres'
        ? await sql<{ name: string }>`select table_name as name from information_schema.tables where table_schema = current_schema()`.execute(db)
        : await sql<{ name: string }>`select name from sqlite_master where type = 'table'`.execute(db)
    return rows.map((r) => r.name)
  } catch (error) {
    // A file that is not SQLite at all ("file is not a database").
    if ((error as { code?: string }).code === 'SQLITE_NOTADB') throw new NotATurnchartDatabaseError(label, 'it is not a SQLite database')
    throw error
  }
}

/**
 * Refuses a SQLite file of another app: one whose `tables` are there, none of them
 * turnchart's. Adding eight tables to an app's own file is done on request
 * (`database: { file, shared: true }`), never because a path pointed at the wrong file. A new
 * file, or one that already has turnchart's tables (beside others or not), passes.
 *
 * @example
 * refuseAnotherAppsFile('./app.db', ['users']) // throws NotATurnchartDatabaseError
 * refuseAnotherAppsFile('./agent.db', []) // a new file: passes
 */
export function refuseAnotherAppsFile(file: string, tables: string[]): void {
  // sqlite_* tables are SQLite's own (sqlite_sequence, sqlite_stat1).
  const theirs = tables.filter((name) => !name.startsWith('sqlite_'))
  if (theirs.length === 0 || theirs.some((name) => name.startsWith('turnchart_'))) return
  const shown = theirs.length > 5 ? `${theirs.slice(0, 5).join(', ')}, …` : theirs.join(', ')
  throw new NotATurnchartDatabaseError(
    file,
    `it holds another app's tables (${shown}) and none of turnchart's; to add turnchart's tables to it, pass database: { file: ${JSON.stringify(file)}, shared: true }`,
  )
}
