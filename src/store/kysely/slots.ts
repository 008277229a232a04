/** The running turns `concurrency` limits, on Kysely: counted after the starts' lock row is updated (held until commit). */
import { sql } from 'kysely'
import { parkedOwner } from '../../core/parking'
import type { SlotStore } from '../store'
import type { Executor } from './rows'

export class KyselySlots implements SlotStore {
  constructor(private readonly db: Executor) {}

  async running(tenant: string | null, exceptTurnId: string): Promise<{ total: number; tenant: number }> {
    await this.db
      .updateTable('turnchart_slots')
      .set({ starts: sql`starts + 1`, last_tenant: tenant ?? '' })
      .where('id', '=', 1)
      .execute()
    const rows = await this.runningRows().where('turnchart_turns.id', '!=', exceptTurnId).execute()
    return { total: rows.length, tenant: tenant === null ? 0 : rows.filter((r) => r.tenant === tenant).length }
  }

  async byTenant(): Promise<Map<string, number>> {
    const rows = await this.runningRows().execute()
    const out = new Map<string, number>()
    for (const row of rows) out.set(row.tenant ?? '', (out.get(row.tenant ?? '') ?? 0) + 1)
    return out
  }

  async servedLast(): Promise<string | undefined> {
    const row = await this.db.selectFrom('turnchart_slots').select('last_tenant').where('id', '=', 1).executeTakeFirst()
    return row?.last_tenant ?? undefined
  }

  private runningRows() {
    return this.db
      .selectFrom('turnchart_turns')
      .innerJoin('turnchart_sessions', 'turnchart_sessions.id', 'turnchart_turns.session_id')
      .select('turnchart_sessions.tenant as tenant')
      .where('turnchart_turns.outcome', 'is', null)
      .where('turnchart_turns.parent_turn_id', 'is', null)
      .where((eb) => eb.or([eb('turnchart_turns.owner', 'is', null), eb('turnchart_turns.owner', '!=', parkedOwner)]))
  }
}
