/**
 * The -wal and -shm files a read-only connection leaves behind. A WAL database whose last
 * connection closed cleanly has neither; a read-only connection creates both to read it and,
 * since it may not checkpoint, leaves them at close. SQLite deletes them itself when the last
 * connection that may write closes, so after reading, when reading created them, a connection
 * that may write opens the file, reads (which attaches it to the WAL) and closes. It writes
 * nothing: the WAL it checkpoints is empty. When another process has the database open, SQLite
 * leaves the files to it, as it must.
 */
import fs from 'node:fs'
import type { SqliteDriver } from './sqlite-driver'

export interface WalFiles {
  wal: boolean
  shm: boolean
}

/** Which of `file`'s -wal and -shm files exist now. */
export function walFiles(file: string): WalFiles {
  return { wal: fs.existsSync(`${file}-wal`), shm: fs.existsSync(`${file}-shm`) }
}

function walSize(file: string): number {
  try {
    return fs.statSync(`${file}-wal`).size
  } catch {
    return 0
  }
}

/**
 * Removes the -wal and -shm files of `file` that were not there `before` a read-only
 * connection opened it (call after closing that connection). Best effort: a file that cannot
 * be opened for writing (read-only on disk) keeps them, as it would have anyway.
 *
 * @example
 * const before = walFiles(file)
 * const handle = new Database(file, { readonly: true }); ...; handle.close()
 * removeWalFilesOfReading(file, before, Database)
 */
export function removeWalFilesOfReading(file: string, before: WalFiles, Database: SqliteDriver): void {
  const now = walFiles(file)
  const created = (now.wal && !before.wal) || (now.shm && !before.shm)
  // A WAL with frames was written by another connection since: its data, its process's files.
  if (!created || walSize(file) > 0) return
  try {
    const handle = new Database(file, { fileMustExist: true })
    try {
      handle.prepare('select count(*) from sqlite_master').all([])
    } finally {
      handle.close()
    }
  } catch {
    // Leftover files cost nothing; failing the command that only read would.
  }
}
