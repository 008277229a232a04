/**
 * `engine.backup(file)`: a copy of the engine's database in a new SQLite file, made while the
 * engine runs (SQLite's online backup: the committed rows, WAL included, as one consistent
 * snapshot; turns go on streaming meanwhile). A backend without the capability (PostgreSQL, a
 * `MemoryStore`) is refused, saying what to use instead.
 */
import fs from 'node:fs'
import path from 'node:path'
import { InvalidArgumentError, InvalidOptionError } from '../core/errors'
import type { OpenedStore } from '../store/store'
import type { EngineCall } from './engine-calls'

export interface BackupCalls {
  /**
   * Writes a consistent copy of the database into `file`, a new SQLite file (its folder must
   * exist; an existing file is refused with `InvalidArgumentError`), while turns go on. The copy
   * opens as a turnchart database (`turnchart show file …`, `createEngine({ database: file })`).
   * SQLite only: on PostgreSQL it throws `InvalidOptionError` naming `pg_dump`.
   */
  backup(file: string): Promise<void>
}

/**
 * @example
 * const engine = { ...backupCalls({ opened, call }), ... }
 * await engine.backup('./backups/agent-2026-12-01.db')
 */
export function backupCalls({ opened, call }: { opened: OpenedStore; call: EngineCall }): BackupCalls {
  return {
    backup: (file) =>
      call('back up the database', async () => {
        if (typeof file !== 'string' || file === '') throw new InvalidArgumentError('file', file, 'the path of a new SQLite file')
        if (fs.existsSync(file)) throw new InvalidArgumentError('file', file, 'a file that does not exist yet (the backup is written there)')
        const dir = path.dirname(path.resolve(file))
        if (!fs.statSync(dir, { throwIfNoEntry: false })?.isDirectory()) throw new InvalidArgumentError('file', file, `a file path in an existing folder (${dir} does not exist)`)
        if (!opened.backup) throw new InvalidOptionError('database', opened.dialect, noBackup(opened.dialect))
        await opened.backup(file)
      }, { once: true }), // (a failed backup leaves its file: run again, it would find it there)
  }
}

function noBackup(backend: string): string {
  return `a SQLite database for engine.backup (this one is ${backend}: PostgreSQL is backed up with pg_dump --schema=<schema>, see docs/deployment.md#backups; a MemoryStore has no file)`
}
