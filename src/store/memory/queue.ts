/** Queued prompts in memory: stored, listed in order, taken (once) by the transaction that starts their turn. */
import type { QueueStore, QueuedPromptRecord } from '../store'
import type { TableChanges } from '../table-changes'
import type { Access } from './access'
import { compareIds, foreignKeyViolation, toJson, uniqueViolation, type QueueRow, type Tables } from './tables'

function fromRow(row: QueueRow): QueuedPromptRecord {
  return {
    id: row.id,
    sessionId: row.sessionId,
    input: JSON.parse(row.input),
    options: JSON.parse(row.options),
    time: { created: row.created },
    ...(row.kind === 'steer' ? { kind: 'steer' as const } : {}),
    ...(row.schedule ? { schedule: JSON.parse(row.schedule) } : {}),
  }
}

/** The session's queued prompts, oldest first. */
function ofSession(t: Tables, sessionId: string): QueueRow[] {
  return [...t.queue.values()].filter((row) => row.sessionId === sessionId).sort((a, b) => compareIds(a.id, b.id))
}

export class MemoryQueue implements QueueStore {
  constructor(
    private readonly db: Access,
    private readonly changes: TableChanges,
  ) {}

  changeMark(): string | number | undefined {
    return this.changes.mark()
  }

  insert(record: QueuedPromptRecord): Promise<void> {
    this.changes.storing()
    return this.db.run((t) => {
      if (t.queue.has(record.id)) throw uniqueViolation('turnchart_queue', 'id')
      if (!t.sessions.has(record.sessionId)) throw foreignKeyViolation('turnchart_queue', 'session_id', record.sessionId)
      t.put('queue', record.id, {
        id: record.id,
        sessionId: record.sessionId,
        input: toJson(record.input),
        options: toJson(record.options),
        created: record.time.created,
        kind: record.kind ?? 'prompt',
        schedule: record.schedule ? toJson(record.schedule) : null,
      })
    })
  }

  get(id: string): Promise<QueuedPromptRecord | undefined> {
    return this.db.run((t) => {
      const row = t.queue.get(id)
      return row && fromRow(row)
    })
  }

  list(sessionId: string): Promise<QueuedPromptRecord[]> {
    return this.db.run((t) => ofSession(t, sessionId).map(fromRow))
  }

  oldest(sessionId: string): Promise<QueuedPromptRecord | undefined> {
    return this.db.run((t) => {
      const row = ofSession(t, sessionId)[0]
      return row && fromRow(row)
    })
  }

  take(id: string): Promise<boolean> {
    return this.db.run((t) => t.remove('queue', id))
  }

  takeSteers(sessionId: string): Promise<QueuedPromptRecord[]> {
    return this.db.run((t) => {
      const steers = ofSession(t, sessionId).filter((row) => row.kind === 'steer')
      for (const row of steers) t.remove('queue', row.id)
      return steers.map(fromRow)
    })
  }

  idleSessions(): Promise<string[]> {
    return this.db.run((t) => {
      const busy = new Set([...t.turns.values()].filter((turn) => turn.outcome === null).map((turn) => turn.sessionId))
      const idle = new Set([...t.queue.values()].map((row) => row.sessionId).filter((id) => !busy.has(id)))
      return [...idle].sort(compareIds)
    })
  }
}
