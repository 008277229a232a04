/**
 * The conversation's own rows: session defaults and revert marker, a turn's stored call
 * options and usage, deleting a session or the messages after a point. Kept apart from the
 * repository's turn-running queries; runs on SQLite and PostgreSQL alike.
 */
import type { StoredTurnOptions } from '../conversation/call-settings'
import { emptyTokens, type MessageInfo, type TurnUsage, type Usage } from '../core/types'
import type { Repository } from './repository'

function num(value: unknown): number {
  return typeof value === 'number' ? value : Number(value) // PostgreSQL bigints arrive as strings
}

/** Sets a session's title (null clears it). Returns false when there is no such session. */
export async function setSessionTitle(repo: Repository, sessionId: string, title: string | null, now: number): Promise<boolean> {
  const result = await repo.db.updateTable('turnchart_sessions').set({ title, updated_at: now }).where('id', '=', sessionId).executeTakeFirst()
  return Number(result.numUpdatedRows) > 0
}

/** Sets (a message id) or clears (null) the session's revert marker. */
export async function setRevertedTo(repo: Repository, sessionId: string, messageId: string | null, now: number): Promise<void> {
  await repo.db.updateTable('turnchart_sessions').set({ reverted_to: messageId, updated_at: now }).where('id', '=', sessionId).execute()
}

/** The session's revert marker, if any. */
export async function revertedTo(repo: Repository, sessionId: string): Promise<string | null> {
  const row = await repo.db.selectFrom('turnchart_sessions').select('reverted_to').where('id', '=', sessionId).executeTakeFirst()
  return row?.reverted_to ?? null
}

/** Deletes the session's messages (and their parts) after `messageId`. */
export async function deleteMessagesAfter(repo: Repository, sessionId: string, messageId: string): Promise<void> {
  await repo.db.deleteFrom('turnchart_parts').where('session_id', '=', sessionId).where('message_id', '>', messageId).execute()
  await repo.db.deleteFrom('turnchart_messages').where('session_id', '=', sessionId).where('id', '>', messageId).execute()
}

/** Deletes a session with its messages, parts, turns and transition logs. Returns false when there was none. */
export async function deleteSessionRows(repo: Repository, sessionId: string): Promise<boolean> {
  const turns = repo.db.selectFrom('turnchart_turns').select('id').where('session_id', '=', sessionId)
  await repo.db.deleteFrom('turnchart_transitions').where('turn_id', 'in', turns).execute()
  await repo.db.deleteFrom('turnchart_turns').where('session_id', '=', sessionId).execute()
  await repo.db.deleteFrom('turnchart_queue').where('session_id', '=', sessionId).execute()
  await repo.db.deleteFrom('turnchart_parts').where('session_id', '=', sessionId).execute()
  await repo.db.deleteFrom('turnchart_messages').where('session_id', '=', sessionId).execute()
  const result = await repo.db.deleteFrom('turnchart_sessions').where('id', '=', sessionId).executeTakeFirst()
  return Number(result.numDeletedRows) > 0
}

export async function setTurnOptions(repo: Repository, turnId: string, options: StoredTurnOptions): Promise<void> {
  await repo.db.updateTable('turnchart_turns').set({ options: JSON.stringify(options) }).where('id', '=', turnId).execute()
}

/** The call options stored with a turn (null for a turn stored before they were). */
export async function turnOptions(repo: Repository, turnId: string): Promise<StoredTurnOptions | null> {
  const row = await repo.db.selectFrom('turnchart_turns').select('options').where('id', '=', turnId).executeTakeFirst()
  return row?.options ? (JSON.parse(row.options) as StoredTurnOptions) : null
}

export async function setTurnUsage(repo: Repository, turnId: string, usage: TurnUsage): Promise<void> {
  await repo.db.updateTable('turnchart_turns').set({ usage: JSON.stringify(usage) }).where('id', '=', turnId).execute()
}

/**
 * The usage of every turn of a session, in order: from the turn row when the turn ended with
 * it written, else summed from the turn's assistant messages (a turn still running, or one
 * ended by recovery).
 */
export async function sessionTurnUsages(repo: Repository, sessionId: string): Promise<TurnUsage[]> {
  const turns = await repo.db.selectFrom('turnchart_turns').select(['id', 'usage']).where('session_id', '=', sessionId).orderBy('id').execute()
  const missing = turns.filter((t) => !t.usage).map((t) => t.id)
  const fromMessages = new Map<string, TurnUsage>()
  if (missing.length > 0) {
    const rows = await repo.db
      .selectFrom('turnchart_messages')
      .select(['turn_id', 'summary', 'data'])
      .where('session_id', '=', sessionId)
      .where('role', '=', 'assistant')
      .where('turn_id', 'in', missing)
      .execute()
    for (const row of rows) {
      const info = JSON.parse(row.data) as Pick<MessageInfo, 'tokens' | 'cost'>
      const usage = fromMessages.get(row.turn_id!) ?? emptyTurnUsage(row.turn_id!)
      addUsage(usage, info, num(row.summary) === 1)
      fromMessages.set(row.turn_id!, usage)
    }
  }
  return turns.map((t) => (t.usage ? (JSON.parse(t.usage) as TurnUsage) : (fromMessages.get(t.id) ?? emptyTurnUsage(t.id))))
}

function emptyUsage(): Usage {
  return { tokens: emptyTokens(), cost: 0 }
}

export function emptyTurnUsage(turnId: string): TurnUsage {
  return { turnId, ...emptyUsage(), compaction: emptyUsage() }
}

function add(into: Usage, from: Pick<MessageInfo, 'tokens' | 'cost'>): void {
  const t = from.tokens
  if (t) {
    into.tokens.input += t.input
    into.tokens.output += t.output
    into.tokens.reasoning += t.reasoning
    into.tokens.cache.read += t.cache.read
    into.tokens.cache.write += t.cache.write
  }
  into.cost += from.cost ?? 0
}

/** Adds a message's usage to a turn's: to the total, and to `compaction` when it is a summary. */
export function addUsage(usage: TurnUsage, info: Pick<MessageInfo, 'tokens' | 'cost'>, summary: boolean): void {
  add(usage, info)
  if (summary) add(usage.compaction, info)
}

/** Sums usages (a session's total). */
export function sumUsage(usages: Usage[]): Usage {
  const total = emptyUsage()
  for (const u of usages) add(total, u)
  return total
}
