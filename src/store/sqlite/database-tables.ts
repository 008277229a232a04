/**
 * What the tables a database holds say about whose database it is: turnchart's (`turnchart_*`
 * tables), a new one (no table), or another app's (tables, none of them turnchart's). Asked by
 * the SQLite openers before they set a pragma (journal_mode = WAL alone would change another
 * app's file).
 */
import { NotATurnchartDatabaseError } from '../../core/errors'

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
