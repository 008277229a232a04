/** Models' circuits on Kysely: a row per model, written by compare-and-set on its version. */
import type { Selectable } from 'kysely'
import type { CircuitTable } from '../schema'
import type { CircuitRecord, CircuitStore } from '../store'
import { num, type Executor } from './rows'

const orNull = (value: unknown): number | null => (value === null || value === undefined ? null : num(value))

function fromRow(row: Selectable<CircuitTable>): CircuitRecord {
  return { model: row.model, failures: num(row.failures), since: num(row.since), openUntil: orNull(row.open_until), probeUntil: orNull(row.probe_until), heldUntil: orNull(row.held_until), version: num(row.version) }
}

export class KyselyCircuits implements CircuitStore {
  constructor(private readonly db: Executor) {}

  async get(model: string): Promise<CircuitRecord | undefined> {
    const row = await this.db.selectFrom('turnchart_circuits').selectAll().where('model', '=', model).executeTakeFirst()
    return row && fromRow(row)
  }

  async list(): Promise<CircuitRecord[]> {
    return (await this.db.selectFrom('turnchart_circuits').selectAll().orderBy('model').execute()).map(fromRow)
  }

  async put(record: CircuitRecord): Promise<boolean> {
    const values = { failures: record.failures, since: record.since, open_until: record.openUntil, probe_until: record.probeUntil, held_until: record.heldUntil, version: record.version }
    if (record.version === 1) {
      const inserted = await this.db
        .insertInto('turnchart_circuits')
        .values({ model: record.model, ...values })
        .onConflict((oc) => oc.column('model').doNothing())
        .executeTakeFirst()
      return Number(inserted.numInsertedOrUpdatedRows ?? 0) > 0
    }
    const updated = await this.db
      .updateTable('turnchart_circuits')
      .set(values)
      .where('model', '=', record.model)
      .where('version', '=', record.version - 1)
      .executeTakeFirst()
    return Number(updated.numUpdatedRows) > 0
  }
}
