/** Control requests in memory: approve, deny and abort asked by any engine, for the engine that runs the turn. */
import type { ControlRequest, ControlStore } from '../store'
import type { Access } from './access'
import { compareIds, foreignKeyViolation, toJson, uniqueViolation } from './tables'

export class MemoryControls implements ControlStore {
  constructor(private readonly db: Access) {}

  add(request: ControlRequest): Promise<void> {
    return this.db.run((t) => {
      if (t.controls.has(request.id)) throw uniqueViolation('turnchart_controls', 'id')
      if (!t.turns.has(request.turnId)) throw foreignKeyViolation('turnchart_controls', 'turn_id', request.turnId)
      t.put('controls', request.id, {
        id: request.id,
        turnId: request.turnId,
        kind: request.kind,
        callId: request.callId ?? null,
        reason: request.reason ?? null,
        createdAt: request.createdAt,
        handledAt: null,
        result: null,
        input: request.input === undefined ? null : toJson(request.input),
        by: request.by ?? null,
      })
    })
  }

  pending(turnIds: string[]): Promise<ControlRequest[]> {
    return this.db.run((t) => {
      const turns = new Set(turnIds)
      return [...t.controls.values()]
        .filter((row) => row.handledAt === null && turns.has(row.turnId))
        .sort((a, b) => compareIds(a.id, b.id))
        .map((row) => ({
          id: row.id,
          turnId: row.turnId,
          kind: row.kind,
          callId: row.callId,
          reason: row.reason,
          createdAt: row.createdAt,
          ...(row.input === null ? {} : { input: JSON.parse(row.input) as unknown }),
          ...(row.by === null ? {} : { by: row.by }),
        }))
    })
  }

  handled(id: string, result: string | null, now: number): Promise<void> {
    return this.db.run((t) => {
      const row = t.controls.get(id)
      if (row && row.handledAt === null) t.put('controls', id, { ...row, handledAt: now, result })
    })
  }

  outcome(id: string): Promise<{ handled: boolean; result: string | null } | undefined> {
    return this.db.run((t) => {
      const row = t.controls.get(id)
      return row && { handled: row.handledAt !== null, result: row.result }
    })
  }
}
