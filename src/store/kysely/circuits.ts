/** Models' circuits on Kysely: a row per model, written by compare-and-set on its version. */
import type { Kysely, Selectable } from 'kysely'
import { precompiledQuery } from '../precompiled-query'
import type { CircuitTable, TurnchartDatabase } from '../schema'
import type { AdmittedSecond, CircuitRecord, CircuitStore } from '../store'
import type { TableChanges } from '../table-changes'
import { num, type Executor } from './rows'

const orNull = (value: unknown): number | null => (value === null || value === undefined ? null : num(value))

function fromRow(row: Selectable<CircuitTable>): CircuitRecord {
  return { model: row.model, failures: num(row.failures), since: num(row.since), openUntil: orNull(row.open_until), probeUntil: orNull(row.probe_until), heldUntil: orNull(row.held_until), admitted: JSON.parse(row.admitted) as AdmittedSecond[], version: num(row.version) }
}

export class KyselyCircuits implements CircuitStore {
  /** @param changes the backend's count of the circuits' changes (SQLite): `changeMark`; absent, read every time (PostgreSQL). */
  constructor(
    private readonly db: Executor,
    private readonly changes?: TableChanges,
  ) {
    if (changes) this.changeMark = () => changes.mark()
  }

  readonly changeMark?: () => string | number | undefined

  async get(model: string): Promise<CircuitRecord | undefined> {
    const { rows } = await getQuery.execute(this.db as Kysely<TurnchartDatabase>, { model })
    const row = rows[0] as Selectable<CircuitTable> | undefined
    return row && fromRow(row)
  }

  async list(): Promise<CircuitRecord[]> {
    return (await this.db.selectFrom('turnchart_circuits').selectAll().orderBy('model').execute()).map(fromRow)
  }

  async put(record: CircuitRecord): Promise<boolean> {
    this.changes?.storing()
    const values = { failures: record.failures, since: record.since, open_until: record.openUntil, probe_until: record.probeUntil, held_until: record.heldUntil, admitted: JSON.stringify(record.admitted), version: record.version }
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

/** Precompiled: every step reads its model's circuit before its request. */
const getQuery = precompiledQuery(['model'], (db, v) => db.selectFrom('turnchart_circuits').selectAll().where('model', '=', v.model as string))
