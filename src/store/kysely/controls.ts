/** Control requests on Kysely: approve, deny and abort asked by any engine, for the engine that runs the turn. */
import type { ControlRequest, ControlStore } from '../store'
import { num, type Executor } from './rows'

export class KyselyControls implements ControlStore {
  constructor(private readonly db: Executor) {}

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
        input: request.input === undefined ? null : JSON.stringify(request.input),
        decided_by: request.by ?? null,
      })
      .execute()
  }

  async pending(turnIds: string[]): Promise<ControlRequest[]> {
    if (turnIds.length === 0) return []
    const rows = await this.db.selectFrom('turnchart_controls').selectAll().where('handled_at', 'is', null).where('turn_id', 'in', turnIds).orderBy('id').execute()
    return rows.map((row) => ({
      id: row.id,
      turnId: row.turn_id,
      kind: row.kind,
      callId: row.call_id,
      reason: row.reason,
      createdAt: num(row.created_at),
      ...(row.input === null ? {} : { input: JSON.parse(row.input) as unknown }),
      ...(row.decided_by === null || row.decided_by === undefined ? {} : { by: row.decided_by }),
    }))
  }

  async handled(id: string, result: string | null, now: number): Promise<void> {
    await this.db.updateTable('turnchart_controls').set({ handled_at: now, result }).where('id', '=', id).where('handled_at', 'is', null).execute()
  }

  async outcome(id: string): Promise<{ handled: boolean; result: string | null } | undefined> {
    const row = await this.db.selectFrom('turnchart_controls').select(['handled_at', 'result']).where('id', '=', id).executeTakeFirst()
    return row && { handled: row.handled_at !== null, result: row.result }
  }
}
