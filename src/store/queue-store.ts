/**
 * The rows of queued prompts (`whenBusy: 'enqueue'`): stored, listed in order, taken by the
 * transaction that starts their turn (so one engine runs each), cancelled.
 */
import type { PromptOptions } from '../conversation/call-settings'
import type { UserPartDraft } from '../core/types'
import type { Repository } from './repository'

/** A prompt waiting for its session to be idle. */
export interface QueuedPromptRecord {
  /** The id its turn will have. */
  id: string
  sessionId: string
  input: UserPartDraft[]
  /** Its options, without headers (never stored). */
  options: PromptOptions
  time: { created: number }
}

type Row = { id: string; session_id: string; input: string; options: string; created_at: number | string }

function fromRow(row: Row): QueuedPromptRecord {
  return { id: row.id, sessionId: row.session_id, input: JSON.parse(row.input), options: JSON.parse(row.options), time: { created: Number(row.created_at) } }
}

export async function insertQueued(repo: Repository, record: QueuedPromptRecord): Promise<void> {
  await repo.db
    .insertInto('turnchart_queue')
    .values({ id: record.id, session_id: record.sessionId, input: JSON.stringify(record.input), options: JSON.stringify(record.options), created_at: record.time.created })
    .execute()
}

/** The session's queued prompts, oldest first. */
export async function listQueued(repo: Repository, sessionId: string): Promise<QueuedPromptRecord[]> {
  const rows = await repo.db.selectFrom('turnchart_queue').selectAll().where('session_id', '=', sessionId).orderBy('id').execute()
  return rows.map(fromRow)
}

export async function oldestQueued(repo: Repository, sessionId: string): Promise<QueuedPromptRecord | undefined> {
  const row = await repo.db.selectFrom('turnchart_queue').selectAll().where('session_id', '=', sessionId).orderBy('id').limit(1).executeTakeFirst()
  return row && fromRow(row)
}

/** Deletes a queued prompt; true when it was still there (it is the caller's now). */
export async function takeQueued(repo: Repository, id: string): Promise<boolean> {
  const result = await repo.db.deleteFrom('turnchart_queue').where('id', '=', id).executeTakeFirst()
  return Number(result.numDeletedRows) > 0
}

export async function queuedExists(repo: Repository, id: string): Promise<boolean> {
  return (await repo.db.selectFrom('turnchart_queue').select('id').where('id', '=', id).executeTakeFirst()) !== undefined
}

/** Sessions with queued prompts and no unfinished turn: their queue should be moving. */
export async function idleSessionsWithQueue(repo: Repository): Promise<string[]> {
  const open = repo.db.selectFrom('turnchart_turns').select('session_id').where('outcome', 'is', null)
  const rows = await repo.db.selectFrom('turnchart_queue').select('session_id').distinct().where('session_id', 'not in', open).execute()
  return rows.map((r) => r.session_id)
}
