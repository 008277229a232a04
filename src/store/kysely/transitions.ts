/** The transition log on Kysely: appended one row per transition (precompiled), read in seq order, pruned. */
import type { Kysely } from 'kysely'
import type { StorageWaited, TransitionRecord } from '../../core/types'
import { precompiledQuery } from '../precompiled-query'
import type { TurnchartDatabase } from '../schema'
import type { TransitionStore } from '../store'
import { num, type Executor } from './rows'

export class KyselyTransitions implements TransitionStore {
  constructor(private readonly db: Executor) {}

  async append(record: TransitionRecord): Promise<void> {
    await appendTransitionQuery.execute(this.db as Kysely<TurnchartDatabase>, {
      turn_id: record.turnId,
      seq: record.seq,
      from_state: record.from,
      event_type: record.event,
      payload: JSON.stringify(record.payload),
      to_state: record.to,
      at: record.time,
      parts: record.parts && record.parts.length > 0 ? JSON.stringify(record.parts) : null,
      storage_waits: record.storageWaits && record.storageWaits.length > 0 ? JSON.stringify(record.storageWaits) : null,
    })
  }

  async list(turnId: string): Promise<TransitionRecord[]> {
    const rows = await this.db.selectFrom('turnchart_transitions').selectAll().where('turn_id', '=', turnId).orderBy('seq').execute()
    return rows.map((row) => ({
      turnId: row.turn_id,
      seq: row.seq,
      from: row.from_state,
      event: row.event_type,
      to: row.to_state,
      payload: JSON.parse(row.payload) as Record<string, unknown>,
      time: num(row.at),
      ...(row.parts ? { parts: JSON.parse(row.parts) as string[] } : {}),
      ...(row.storage_waits ? { storageWaits: JSON.parse(row.storage_waits) as StorageWaited[] } : {}),
    }))
  }

  async deleteFinished(before: number): Promise<number> {
    // A child turn's log goes with its tree's: only once the root also ended before `before`.
    const endedRoots = this.db.selectFrom('turnchart_turns').select('id').where('outcome', 'is not', null).where('updated_at', '<', before).where('root_turn_id', 'is', null)
    const finished = this.db
      .selectFrom('turnchart_turns')
      .select('id')
      .where('outcome', 'is not', null)
      .where('updated_at', '<', before)
      .where((eb) => eb.or([eb('root_turn_id', 'is', null), eb('root_turn_id', 'in', endedRoots)]))
    const result = await this.db.deleteFrom('turnchart_transitions').where('turn_id', 'in', finished).executeTakeFirst()
    return Number(result.numDeletedRows)
  }
}

const appendTransitionQuery = precompiledQuery(
  ['turn_id', 'seq', 'from_state', 'event_type', 'payload', 'to_state', 'at', 'parts', 'storage_waits'],
  (db, v) => db.insertInto('turnchart_transitions').values(v as never),
)
