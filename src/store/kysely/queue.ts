/** Queued prompts on Kysely: stored, listed in order, taken by the transaction that starts their turn. */
import type { Kysely } from 'kysely'
import { precompiledQuery } from '../precompiled-query'
import type { TurnchartDatabase } from '../schema'
import type { TableChanges } from '../table-changes'
import type { QueueStore, QueuedPromptRecord } from '../store'
import { num, type Executor } from './rows'

type Row = { id: string; session_id: string; input: string; options: string; created_at: number | string; kind: 'prompt' | 'steer'; schedule: string | null }

function fromRow(row: Row): QueuedPromptRecord {
  return {
    id: row.id,
    sessionId: row.session_id,
    input: JSON.parse(row.input),
    options: JSON.parse(row.options),
    time: { created: num(row.created_at) },
    ...(row.kind === 'steer' ? { kind: 'steer' as const } : {}),
    ...(row.schedule ? { schedule: JSON.parse(row.schedule) } : {}),
  }
}

export class KyselyQueue implements QueueStore {
  /** @param changes the database's queue changes, when turnchart's own connection is the only writer it cannot see (SQLite). */
  constructor(
    private readonly db: Executor,
    private readonly changes?: TableChanges,
  ) {
    if (changes) this.changeMark = () => changes.mark()
  }

  readonly changeMark?: () => string | number | undefined

  async insert(record: QueuedPromptRecord): Promise<void> {
    this.changes?.storing()
    await this.db
      .insertInto('turnchart_queue')
      .values({
        id: record.id,
        session_id: record.sessionId,
        input: JSON.stringify(record.input),
        options: JSON.stringify(record.options),
        created_at: record.time.created,
        kind: record.kind ?? 'prompt',
        schedule: record.schedule ? JSON.stringify(record.schedule) : null,
      })
      .execute()
  }

  async get(id: string): Promise<QueuedPromptRecord | undefined> {
    const row = await this.db.selectFrom('turnchart_queue').selectAll().where('id', '=', id).executeTakeFirst()
    return row && fromRow(row)
  }

  async list(sessionId: string): Promise<QueuedPromptRecord[]> {
    const { rows } = await listQuery.execute(this.db as Kysely<TurnchartDatabase>, { session_id: sessionId })
    return (rows as Row[]).map(fromRow)
  }

  async oldest(sessionId: string): Promise<QueuedPromptRecord | undefined> {
    const row = await this.db.selectFrom('turnchart_queue').selectAll().where('session_id', '=', sessionId).orderBy('id').limit(1).executeTakeFirst()
    return row && fromRow(row)
  }

  async take(id: string): Promise<boolean> {
    const result = await this.db.deleteFrom('turnchart_queue').where('id', '=', id).executeTakeFirst()
    return Number(result.numDeletedRows) > 0
  }

  async takeSteers(sessionId: string): Promise<QueuedPromptRecord[]> {
    const rows = await this.db.selectFrom('turnchart_queue').selectAll().where('session_id', '=', sessionId).where('kind', '=', 'steer').orderBy('id').execute()
    if (rows.length === 0) return []
    await this.db.deleteFrom('turnchart_queue').where('id', 'in', rows.map((r) => r.id)).execute()
    return rows.map(fromRow)
  }

  async idleSessions(): Promise<string[]> {
    const open = this.db.selectFrom('turnchart_turns').select('session_id').where('outcome', 'is', null)
    const rows = await this.db.selectFrom('turnchart_queue').select('session_id').distinct().where('session_id', 'not in', open).orderBy('session_id').execute()
    return rows.map((r) => r.session_id)
  }
}

/** Precompiled: every step gate of every turn reads its session's queue (the steers), most often finding nothing. */
const listQuery = precompiledQuery(['session_id'], (db, v) =>
  db.selectFrom('turnchart_queue').selectAll().where('session_id', '=', v.session_id as string).orderBy('id'),
)
