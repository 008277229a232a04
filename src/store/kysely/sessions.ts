/** Sessions on Kysely: the session rows (with their defaults and metadata), their lock, title and revert marker, and the cascade of a delete. */
import type { Selectable } from 'kysely'
import type { SessionInfo } from '../../core/types'
import type { SessionTable } from '../schema'
import type { SessionStore } from '../store'
import { num, parseJsonOrNull, type Executor } from './rows'

function sessionFromRow(row: Selectable<SessionTable>): SessionInfo {
  const defaults = parseJsonOrNull<SessionInfo['defaults']>(row.defaults)
  const metadata = parseJsonOrNull<SessionInfo['metadata']>(row.metadata)
  const forkedFrom = parseJsonOrNull<SessionInfo['forkedFrom']>(row.forked_from ?? null)
  return {
    id: row.id,
    title: row.title,
    time: { created: num(row.created_at), updated: num(row.updated_at) },
    ...(defaults ? { defaults } : {}),
    ...(row.reverted_to ? { revertedTo: row.reverted_to } : {}),
    ...(metadata ? { metadata } : {}),
    ...(row.parent_id ? { parentSessionId: row.parent_id } : {}),
    ...(row.tenant !== null && row.tenant !== undefined ? { tenant: row.tenant } : {}),
    ...(forkedFrom ? { forkedFrom } : {}),
  }
}

export class KyselySessions implements SessionStore {
  constructor(private readonly db: Executor) {}

  async insert(session: SessionInfo): Promise<void> {
    await this.db
      .insertInto('turnchart_sessions')
      .values({
        id: session.id,
        title: session.title,
        created_at: session.time.created,
        updated_at: session.time.updated,
        defaults: session.defaults ? JSON.stringify(session.defaults) : null,
        metadata: session.metadata ? JSON.stringify(session.metadata) : null,
        parent_id: session.parentSessionId ?? null,
        tenant: session.tenant ?? null,
        forked_from: session.forkedFrom ? JSON.stringify(session.forkedFrom) : null,
      })
      .execute()
  }

  async get(id: string): Promise<SessionInfo | undefined> {
    const row = await this.db.selectFrom('turnchart_sessions').selectAll().where('id', '=', id).executeTakeFirst()
    return row && sessionFromRow(row)
  }

  async list(options: { children?: boolean } = {}): Promise<SessionInfo[]> {
    let query = this.db.selectFrom('turnchart_sessions').selectAll()
    if (!options.children) query = query.where('parent_id', 'is', null)
    const rows = await query.orderBy('created_at').orderBy('id').execute()
    return rows.map(sessionFromRow)
  }

  async children(ids: string[]): Promise<SessionInfo[]> {
    if (ids.length === 0) return []
    const rows = await this.db.selectFrom('turnchart_sessions').selectAll().where('parent_id', 'in', ids).orderBy('created_at').orderBy('id').execute()
    return rows.map(sessionFromRow)
  }

  async lock(id: string, now: number): Promise<boolean> {
    // An UPDATE locks the row on PostgreSQL and takes SQLite's write lock.
    const result = await this.db.updateTable('turnchart_sessions').set({ updated_at: now }).where('id', '=', id).executeTakeFirst()
    return Number(result.numUpdatedRows) > 0
  }

  async setTitle(id: string, title: string | null, now: number): Promise<boolean> {
    const result = await this.db.updateTable('turnchart_sessions').set({ title, updated_at: now }).where('id', '=', id).executeTakeFirst()
    return Number(result.numUpdatedRows) > 0
  }

  async setRevertedTo(id: string, messageId: string | null, now: number): Promise<void> {
    await this.db.updateTable('turnchart_sessions').set({ reverted_to: messageId, updated_at: now }).where('id', '=', id).execute()
  }

  async delete(id: string): Promise<boolean> {
    // A run tree's child sessions go with their parent, leaves first.
    const children = await this.children([id])
    for (const child of children) await this.delete(child.id)
    const turns = this.db.selectFrom('turnchart_turns').select('id').where('session_id', '=', id)
    await this.db.deleteFrom('turnchart_controls').where('turn_id', 'in', turns).execute()
    await this.db.deleteFrom('turnchart_transitions').where('turn_id', 'in', turns).execute()
    await this.db.deleteFrom('turnchart_tree_spending').where('root_turn_id', 'in', turns).execute()
    await this.db.deleteFrom('turnchart_turns').where('session_id', '=', id).execute()
    await this.db.deleteFrom('turnchart_queue').where('session_id', '=', id).execute()
    await this.db.deleteFrom('turnchart_parts').where('session_id', '=', id).execute()
    await this.db.deleteFrom('turnchart_messages').where('session_id', '=', id).execute()
    const result = await this.db.deleteFrom('turnchart_sessions').where('id', '=', id).executeTakeFirst()
    return Number(result.numDeletedRows) > 0
  }
}
