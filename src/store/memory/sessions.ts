/** Sessions in memory: the session rows (with their defaults and metadata), their lock, title and revert marker, and the cascade of a delete. */
import type { ForkOrigin, SessionDefaults, SessionInfo, SessionMetadata } from '../../core/types'
import type { SessionStore } from '../store'
import type { Access } from './access'
import { compareIds, parseJsonOrNull, toJson, uniqueViolation, type SessionRow, type Tables } from './tables'

function sessionFromRow(row: SessionRow): SessionInfo {
  const defaults = parseJsonOrNull<SessionDefaults>(row.defaults)
  const metadata = parseJsonOrNull<SessionMetadata>(row.metadata)
  const forkedFrom = parseJsonOrNull<ForkOrigin>(row.forkedFrom)
  return {
    id: row.id,
    title: row.title,
    time: { created: row.created, updated: row.updated },
    ...(defaults ? { defaults } : {}),
    ...(row.revertedTo ? { revertedTo: row.revertedTo } : {}),
    ...(metadata ? { metadata } : {}),
    ...(row.parentId ? { parentSessionId: row.parentId } : {}),
    ...(row.tenant !== null ? { tenant: row.tenant } : {}),
    ...(forkedFrom ? { forkedFrom } : {}),
  }
}

export class MemorySessions implements SessionStore {
  constructor(private readonly db: Access) {}

  insert(session: SessionInfo): Promise<void> {
    return this.db.run((t) => {
      if (t.sessions.has(session.id)) throw uniqueViolation('turnchart_sessions', 'id')
      // As the SQL insert: a revert marker is set by setRevertedTo only.
      t.put('sessions', session.id, {
        id: session.id,
        title: session.title ?? null,
        created: session.time.created,
        updated: session.time.updated,
        defaults: session.defaults ? toJson(session.defaults) : null,
        revertedTo: null,
        metadata: session.metadata ? toJson(session.metadata) : null,
        parentId: session.parentSessionId ?? null,
        tenant: session.tenant ?? null,
        forkedFrom: session.forkedFrom ? toJson(session.forkedFrom) : null,
      })
    })
  }

  get(id: string): Promise<SessionInfo | undefined> {
    return this.db.run((t) => {
      const row = t.sessions.get(id)
      return row && sessionFromRow(row)
    })
  }

  list(options: { children?: boolean } = {}): Promise<SessionInfo[]> {
    return this.db.run((t) =>
      [...t.sessions.values()]
        .filter((row) => options.children || row.parentId === null)
        .sort((a, b) => a.created - b.created || compareIds(a.id, b.id))
        .map(sessionFromRow),
    )
  }

  children(ids: string[]): Promise<SessionInfo[]> {
    return this.db.run((t) =>
      [...t.sessions.values()]
        .filter((row) => row.parentId !== null && ids.includes(row.parentId))
        .sort((a, b) => a.created - b.created || compareIds(a.id, b.id))
        .map(sessionFromRow),
    )
  }

  /** Nothing to lock (the transaction holds the whole store); touches the row as the SQL UPDATE does. */
  lock(id: string, now: number): Promise<boolean> {
    return this.update(id, { updated: now })
  }

  setTitle(id: string, title: string | null, now: number): Promise<boolean> {
    return this.update(id, { title, updated: now })
  }

  async setRevertedTo(id: string, messageId: string | null, now: number): Promise<void> {
    await this.update(id, { revertedTo: messageId, updated: now })
  }

  delete(id: string): Promise<boolean> {
    return this.db.run((t) => {
      // A run tree's child sessions go with their parent.
      const sessions = new Set([id])
      for (let level = [id]; level.length > 0; ) {
        level = [...t.sessions.values()].filter((row) => row.parentId !== null && level.includes(row.parentId)).map((row) => row.id)
        for (const child of level) sessions.add(child)
      }
      const existed = t.sessions.has(id)
      for (const sessionId of sessions) deleteOne(t, sessionId)
      return existed
    })
  }

  private update(id: string, change: Partial<SessionRow>): Promise<boolean> {
    return this.db.run((t) => {
      const row = t.sessions.get(id)
      if (!row) return false
      t.put('sessions', id, { ...row, ...change })
      return true
    })
  }
}

/** Deletes one session and its rows. */
function deleteOne(t: Tables, id: string): void {
  const turns = new Set([...t.turns.values()].filter((turn) => turn.sessionId === id).map((turn) => turn.id))
  for (const control of [...t.controls.values()]) if (turns.has(control.turnId)) t.remove('controls', control.id)
  for (const [key, row] of [...t.transitions]) if (turns.has(row.turnId)) t.remove('transitions', key)
  for (const turnId of turns) t.remove('spending', turnId) // (a tree's spending goes with its root turn)
  for (const turnId of turns) t.remove('turns', turnId)
  for (const row of [...t.queue.values()]) if (row.sessionId === id) t.remove('queue', row.id)
  for (const row of [...t.schedules.values()]) if (row.sessionId === id) t.remove('schedules', row.id)
  for (const row of [...t.parts.values()]) if (row.sessionId === id) t.remove('parts', row.id)
  for (const row of [...t.messages.values()]) if (row.sessionId === id) t.remove('messages', row.id)
  t.remove('sessions', id)
}
