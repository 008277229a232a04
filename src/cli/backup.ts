/**
 * `turnchart backup <db> <file>`: a consistent copy of a SQLite database in the new file
 * `<file>`, taken with SQLite's online backup, safe while an app's engine writes to it (the
 * committed rows, WAL included; a turn streaming meanwhile is copied as far as it had
 * committed). The database is only read. A PostgreSQL database is backed up with `pg_dump`:
 * the command says how.
 */
import fs from 'node:fs'
import path from 'node:path'
import { redactUrl } from '../store/redact-url'
import { parseArgs } from './args'
import { CliError, openForReading, type CliIO } from './io'

export async function backupCommand(argv: string[], io: CliIO): Promise<number> {
  const { positionals } = parseArgs(argv, { positionals: ['db', 'file'] })
  const [database, file] = positionals
  if (fs.existsSync(file)) throw new CliError(`${file} exists: name a file that does not exist yet (the backup is written there)`)
  const dir = path.dirname(path.resolve(file))
  if (!fs.statSync(dir, { throwIfNoEntry: false })?.isDirectory()) throw new CliError(`no such folder for the backup: ${dir}`)
  const store = await openForReading(database)
  try {
    if (!store.backup) throw new CliError(noOnlineBackup(database))
    await store.backup(file)
  } finally {
    await store.close()
  }
  io.stdout.write(`backed up ${store.label} to ${file}\n`)
  return 0
}

/** PostgreSQL: `pg_dump` of turnchart's schema (libpq takes no `?schema=`, so it moves to --schema). */
function noOnlineBackup(database: string): string {
  let schema = 'public'
  let url = database
  try {
    const parsed = new URL(database)
    schema = parsed.searchParams.get('schema') ?? schema
    parsed.searchParams.delete('schema')
    url = parsed.toString()
  } catch {
    // not a URL: shown as given
  }
  return (
    `${redactUrl(database)} has no online backup (turnchart backup copies SQLite files; this is PostgreSQL). ` +
    `Back up turnchart's schema with pg_dump: pg_dump --schema=${schema} --format=custom --file=<file> '${redactUrl(url)}' (docs/deployment.md)`
  )
}
