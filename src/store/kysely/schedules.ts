/** Schedules on Kysely: stored once by id, listed, and claimed occurrence by occurrence (a compare on `next_at`). */
import type { Selectable } from 'kysely'
import type { ScheduleTable } from '../schema'
import type { ScheduleAdvance, ScheduleRecord, ScheduleStore } from '../store'
import { num, type Executor } from './rows'

const orNull = (value: unknown): number | null => (value === null || value === undefined ? null : num(value))

function fromRow(row: Selectable<ScheduleTable>): ScheduleRecord {
  return {
    id: row.id,
    sessionId: row.session_id,
    input: JSON.parse(row.input),
    options: JSON.parse(row.options),
    rule: JSON.parse(row.rule),
    catchUp: JSON.parse(row.catch_up),
    next: orNull(row.next_at),
    last: orNull(row.last_at),
    lastTurnId: row.last_turn_id,
    missed: num(row.missed),
    paused: num(row.paused) === 1,
    time: { created: num(row.created_at) },
  }
}

export class KyselySchedules implements ScheduleStore {
  constructor(private readonly db: Executor) {}

  async insert(record: ScheduleRecord): Promise<ScheduleRecord> {
    await this.db
      .insertInto('turnchart_schedules')
      .values({
        id: record.id,
        session_id: record.sessionId,
        input: JSON.stringify(record.input),
        options: JSON.stringify(record.options),
        rule: JSON.stringify(record.rule),
        catch_up: JSON.stringify(record.catchUp),
        next_at: record.next,
        last_at: record.last,
        last_turn_id: record.lastTurnId,
        missed: record.missed,
        paused: record.paused ? 1 : 0,
        created_at: record.time.created,
      })
      .onConflict((oc) => oc.column('id').doNothing())
      .execute()
    return (await this.get(record.id))!
  }

  async get(id: string): Promise<ScheduleRecord | undefined> {
    const row = await this.db.selectFrom('turnchart_schedules').selectAll().where('id', '=', id).executeTakeFirst()
    return row && fromRow(row)
  }

  async list(sessionId?: string): Promise<ScheduleRecord[]> {
    let query = this.db.selectFrom('turnchart_schedules').selectAll()
    if (sessionId !== undefined) query = query.where('session_id', '=', sessionId)
    return (await query.orderBy('created_at').orderBy('id').execute()).map(fromRow)
  }

  async delete(id: string): Promise<boolean> {
    const result = await this.db.deleteFrom('turnchart_schedules').where('id', '=', id).executeTakeFirst()
    return Number(result.numDeletedRows) > 0
  }

  async setPaused(id: string, paused: boolean, next: number | null): Promise<boolean> {
    const result = await this.db
      .updateTable('turnchart_schedules')
      .set({ paused: paused ? 1 : 0, next_at: next })
      .where('id', '=', id)
      .executeTakeFirst()
    return Number(result.numUpdatedRows) > 0
  }

  async due(now: number): Promise<ScheduleRecord[]> {
    const rows = await this.db.selectFrom('turnchart_schedules').selectAll().where('next_at', '<=', now).where('paused', '=', 0).orderBy('next_at').execute()
    return rows.map(fromRow)
  }

  async nextDue(): Promise<number | undefined> {
    const row = await this.db.selectFrom('turnchart_schedules').select((eb) => eb.fn.min('next_at').as('next')).where('paused', '=', 0).executeTakeFirst()
    return orNull(row?.next) ?? undefined
  }

  async claim(id: string, at: number, advance: ScheduleAdvance): Promise<boolean> {
    const result = await this.db
      .updateTable('turnchart_schedules')
      .set({ next_at: advance.next, last_at: advance.last, last_turn_id: advance.lastTurnId, missed: advance.missed })
      .where('id', '=', id)
      .where('next_at', '=', at)
      .where('paused', '=', 0)
      .executeTakeFirst()
    return Number(result.numUpdatedRows) > 0
  }
}
