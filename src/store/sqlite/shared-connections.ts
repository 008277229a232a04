/**
 * One SQLite connection per file per process. Two better-sqlite3 connections to one file in
 * one process deadlock: the second waits for the write lock synchronously (blocking the event
 * loop for the whole busy timeout) while the first cannot finish the transaction that holds
 * it. So engines of one process that open the same file share its connection (Kysely
 * serialises their transactions on it); the last `close()` closes it.
 */
import fs from 'node:fs'
import path from 'node:path'
import type { OpenedDatabase } from '../backend'

interface Shared {
  opened: OpenedDatabase
  holders: number
}

const byFile = new Map<string, Shared>()

/** The file's identity: its real path (the folder's when the file does not exist yet). */
function fileKey(file: string): string {
  const resolved = path.resolve(file)
  try {
    return fs.realpathSync(resolved)
  } catch {
    return path.join(fs.realpathSync(path.dirname(resolved)), path.basename(resolved))
  }
}

/**
 * The connection already open on `file` in this process, or a new one from `open`. Each
 * caller gets its own `close()`, which releases its hold once.
 *
 * @example
 * const opened = shareConnection('./agent.db', () => openSqliteFile('./agent.db'))
 */
export function shareConnection(file: string, open: () => OpenedDatabase): OpenedDatabase {
  const key = fileKey(file)
  let shared = byFile.get(key)
  if (shared) {
    try {
      shared.opened.verify?.()
    } catch {
      shared = undefined // the file was replaced: its old connection is not this file's
    }
  }
  if (!shared) {
    shared = { opened: open(), holders: 0 }
    byFile.set(key, shared)
  }
  const entry = shared
  entry.holders++
  let released = false
  return {
    ...entry.opened,
    async close() {
      if (released) return
      released = true
      if (--entry.holders > 0) return
      if (byFile.get(key) === entry) byFile.delete(key)
      await entry.opened.close()
    },
  }
}
