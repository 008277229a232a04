/** The transition log in memory: one row per (turn, seq) as the SQL primary key has it, read in seq order, pruned. */
import type { StorageWaited, TransitionRecord } from '../../core/types'
import type { TransitionStore } from '../store'
import type { Access } from './access'
import { foreignKeyViolation, toJson, transitionKey, uniqueViolation } from './tables'

export class MemoryTransitions implements TransitionStore {
  constructor(private readonly db: Access) {}

  append(record: TransitionRecord): Promise<void> {
    return this.db.run((t) => {
      const key = transitionKey(record.turnId, record.seq)
      if (t.transitions.has(key)) throw uniqueViolation('turnchart_transitions', 'turn_id, turnchart_transitions.seq')
      if (!t.turns.has(record.turnId)) throw foreignKeyViolation('turnchart_transitions', 'turn_id', record.turnId)
      t.put('transitions', key, {
        turnId: record.turnId,
        seq: record.seq,
        from: record.from,
        event: record.event,
        payload: toJson(record.payload),
        to: record.to,
        at: record.time,
        parts: record.parts && record.parts.length > 0 ? toJson(record.parts) : null,
        storageWaits: record.storageWaits && record.storageWaits.length > 0 ? toJson(record.storageWaits) : null,
      })
    })
  }

  list(turnId: string): Promise<TransitionRecord[]> {
    return this.db.run((t) =>
      [...t.transitions.values()]
        .filter((row) => row.turnId === turnId)
        .sort((a, b) => a.seq - b.seq)
        .map((row) => ({
          turnId: row.turnId,
          seq: row.seq,
          from: row.from,
          event: row.event,
          to: row.to,
          payload: JSON.parse(row.payload) as Record<string, unknown>,
          time: row.at,
          ...(row.parts ? { parts: JSON.parse(row.parts) as string[] } : {}),
          ...(row.storageWaits ? { storageWaits: JSON.parse(row.storageWaits) as StorageWaited[] } : {}),
        })),
    )
  }

  deleteFinished(before: number): Promise<number> {
    return this.db.run((t) => {
      const ended = (turn: { outcome: unknown; updated: number } | undefined) => turn !== undefined && turn.outcome !== null && turn.updated < before
      // A child turn's log goes with its tree's: only once the root also ended before `before`.
      const finished = new Set(
        [...t.turns.values()].filter((turn) => ended(turn) && (turn.rootTurnId === null || ended(t.turns.get(turn.rootTurnId)))).map((turn) => turn.id),
      )
      let deleted = 0
      for (const [key, row] of [...t.transitions]) if (finished.has(row.turnId) && t.remove('transitions', key)) deleted++
      return deleted
    })
  }
}
