/** Schedules in memory: stored once by id, listed, and claimed occurrence by occurrence (calls run one at a time). */
import type { ScheduleAdvance, ScheduleRecord, ScheduleStore } from '../store'
import type { Access } from './access'
import { compareIds, foreignKeyViolation } from './tables'

const copy = (record: ScheduleRecord): ScheduleRecord => structuredClone(record)

export class MemorySchedules implements ScheduleStore {
  constructor(private readonly db: Access) {}

  insert(record: ScheduleRecord): Promise<ScheduleRecord> {
    return this.db.run((t) => {
      const stored = t.schedules.get(record.id)
      if (stored) return copy(stored)
      if (!t.sessions.has(record.sessionId)) throw foreignKeyViolation('turnchart_schedules', 'session_id', record.sessionId)
      t.put('schedules', record.id, copy(record))
      return copy(record)
    })
  }

  get(id: string): Promise<ScheduleRecord | undefined> {
    return this.db.run((t) => {
      const row = t.schedules.get(id)
      return row && copy(row)
    })
  }

  list(sessionId?: string): Promise<ScheduleRecord[]> {
    return this.db.run((t) =>
      [...t.schedules.values()]
        .filter((row) => sessionId === undefined || row.sessionId === sessionId)
        .sort((a, b) => a.time.created - b.time.created || compareIds(a.id, b.id))
        .map(copy),
    )
  }

  delete(id: string): Promise<boolean> {
    return this.db.run((t) => t.remove('schedules', id))
  }

  setPaused(id: string, paused: boolean, next: number | null): Promise<boolean> {
    return this.db.run((t) => {
      const row = t.schedules.get(id)
      if (!row) return false
      t.put('schedules', id, { ...row, paused, next })
      return true
    })
  }

  due(now: number): Promise<ScheduleRecord[]> {
    return this.db.run((t) =>
      [...t.schedules.values()]
        .filter((row) => !row.paused && row.next !== null && row.next <= now)
        .sort((a, b) => a.next! - b.next!)
        .map(copy),
    )
  }

  nextDue(): Promise<number | undefined> {
    return this.db.run((t) => {
      let next: number | undefined
      for (const row of t.schedules.values()) if (!row.paused && row.next !== null && (next === undefined || row.next < next)) next = row.next
      return next
    })
  }

  claim(id: string, at: number, advance: ScheduleAdvance): Promise<boolean> {
    return this.db.run((t) => {
      const row = t.schedules.get(id)
      if (!row || row.paused || row.next !== at) return false
      t.put('schedules', id, { ...row, ...advance })
      return true
    })
  }
}
