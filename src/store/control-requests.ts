/**
 * The control requests table: `approve`, `deny` and `abort` asked by any engine, for the engine
 * that runs the turn to apply. Kept apart from the repository: one table, one job.
 */
import type { Kysely, Transaction } from 'kysely'
import type { TurnchartDatabase } from './schema'

type Executor = Kysely<TurnchartDatabase> | Transaction<TurnchartDatabase>

export interface ControlRequest {
  id: string
  turnId: string
  kind: 'approve' | 'deny' | 'abort'
  callId: string | null
  reason: string | null
  createdAt: number
}

function num(value: unknown): number {
  return typeof value === 'number' ? value : Number(value)
}

export class ControlRequests {
  constructor(private readonly db: Executor) {}

  /** Stores a request. */
  async add(request: ControlRequest): Promise<void> {
    await this.db
      .insertInto('turnchart_controls')
      .values({
        id: request.id,
        turn_id: request.turnId,
        kind: request.kind,
        call_id: request.callId,
        reason: request.reason,
        created_at: request.createdAt,
        handled_at: null,
        result: null,
      })
      .execute()
  }

  /** Requests not yet handled for these turns, oldest first. */
  async pending(turnIds: string[]): Promise<ControlRequest[]> {
    if (turnIds.length === 0) return []
    const rows = await this.db
      .selectFrom('turnchart_controls')
      .selectAll()
      .where('handled_at', 'is', null)
      .where('turn_id', 'in', turnIds)
      .orderBy('id')
      .execute()
    return rows.map((row) => ({ id: row.id, turnId: row.turn_id, kind: row.kind, callId: row.call_id, reason: row.reason, createdAt: num(row.created_at) }))
  }

  /** Marks a request handled: applied (`result` null) or refused with the reason. */
  async handled(id: string, result: string | null, now: number): Promise<void> {
    await this.db.updateTable('turnchart_controls').set({ handled_at: now, result }).where('id', '=', id).execute()
  }

  /** Whether a request was handled yet, and how. */
  async outcome(id: string): Promise<{ handled: boolean; result: string | null } | undefined> {
    const row = await this.db.selectFrom('turnchart_controls').select(['handled_at', 'result']).where('id', '=', id).executeTakeFirst()
    return row && { handled: row.handled_at !== null, result: row.result }
  }
}
