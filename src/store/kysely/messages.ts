/**
 * Messages and parts on Kysely. A message row keeps its id, session, turn, role and summary
 * flag in columns and the rest of its info as JSON; a part row keeps its id, session, message
 * and type in columns and the rest as JSON. Parts and messages are the hot writes: precompiled.
 */
import type { Kysely } from 'kysely'
import type { MessageInfo, MessageWithParts, Part } from '../../core/types'
import { precompiledQuery } from '../precompiled-query'
import type { TurnchartDatabase } from '../schema'
import type { MessageStore } from '../store'
import { num, type Executor } from './rows'

function messageData(info: MessageInfo): string {
  const { id: _id, sessionId: _s, role: _r, turnId: _t, summary: _su, ...rest } = info
  return JSON.stringify(rest)
}

/** A part's JSON without the fields its columns hold (id, session, message, type): less to store. */
function partData(part: Part): string {
  const { id: _id, sessionId: _session, messageId: _message, type: _type, ...rest } = part
  return JSON.stringify(rest)
}

function messageFromRow(row: { id: string; session_id: string; turn_id: string | null; role: 'user' | 'assistant'; summary: number | string; data: string }): MessageInfo {
  return {
    ...(JSON.parse(row.data) as Omit<MessageInfo, 'id' | 'sessionId' | 'role'>),
    id: row.id,
    sessionId: row.session_id,
    role: row.role,
    ...(row.turn_id ? { turnId: row.turn_id } : {}),
    ...(num(row.summary) === 1 ? { summary: true } : {}),
  }
}

export class KyselyMessages implements MessageStore {
  constructor(private readonly db: Executor) {}

  async upsert(info: MessageInfo): Promise<void> {
    await upsertMessageQuery.execute(this.db as Kysely<TurnchartDatabase>, {
      id: info.id,
      session_id: info.sessionId,
      turn_id: info.turnId ?? null,
      role: info.role,
      summary: info.summary ? 1 : 0,
      created_at: info.time.created,
      data: messageData(info),
    })
  }

  /** One statement per 64 parts. A part given twice is written once, as given last. */
  async upsertParts(given: Part[], now: number): Promise<void> {
    // PostgreSQL refuses a statement that upserts one row twice ("ON CONFLICT DO UPDATE command
    // cannot affect row a second time"); SQLite keeps the last. One row per id: the last, on both.
    const parts = given.length > 1 ? [...new Map(given.map((part) => [part.id, part])).values()] : given
    for (let start = 0; start < parts.length; start += maxPartsPerStatement) {
      const end = Math.min(parts.length, start + maxPartsPerStatement)
      // In the order of the query's names: each row's columns, row by row.
      const values: unknown[] = []
      for (let i = start; i < end; i++) {
        const part = parts[i]
        values.push(part.id, part.sessionId, part.messageId, part.type, partData(part), now)
      }
      await upsertPartsQuery(end - start).executeInOrder(this.db as Kysely<TurnchartDatabase>, values)
    }
  }

  async list(sessionId: string, options: { fromLatestSummary?: boolean } = {}): Promise<MessageWithParts[]> {
    let from: string | undefined
    if (options.fromLatestSummary) {
      const latest = await this.db
        .selectFrom('turnchart_messages')
        .select('id')
        .where('session_id', '=', sessionId)
        .where('summary', '=', 1)
        .orderBy('id', 'desc')
        .limit(1)
        .executeTakeFirst()
      from = latest?.id
    }
    let messageQuery = this.db.selectFrom('turnchart_messages').selectAll().where('session_id', '=', sessionId)
    let partQuery = this.db.selectFrom('turnchart_parts').select(['id', 'session_id', 'message_id', 'type', 'data']).where('session_id', '=', sessionId)
    if (from) {
      messageQuery = messageQuery.where('id', '>=', from)
      partQuery = partQuery.where('message_id', '>=', from)
    }
    const [messages, parts] = await Promise.all([messageQuery.orderBy('id').execute(), partQuery.orderBy('id').execute()])
    const byMessage = new Map<string, Part[]>()
    for (const row of parts) {
      const list = byMessage.get(row.message_id)
      const part = { id: row.id, sessionId: row.session_id, messageId: row.message_id, type: row.type, ...JSON.parse(row.data) } as Part
      if (list) list.push(part)
      else byMessage.set(row.message_id, [part])
    }
    return messages.map((row) => ({ info: messageFromRow(row), parts: byMessage.get(row.id) ?? [] }))
  }

  async exists(sessionId: string, messageId: string): Promise<boolean> {
    const row = await this.db.selectFrom('turnchart_messages').select('id').where('session_id', '=', sessionId).where('id', '=', messageId).executeTakeFirst()
    return row !== undefined
  }

  async deleteAfter(sessionId: string, messageId: string): Promise<void> {
    await this.db.deleteFrom('turnchart_parts').where('session_id', '=', sessionId).where('message_id', '>', messageId).execute()
    await this.db.deleteFrom('turnchart_messages').where('session_id', '=', sessionId).where('id', '>', messageId).execute()
  }

  async assistantInfos(turnIds: string[]): Promise<MessageInfo[]> {
    if (turnIds.length === 0) return []
    const rows = await this.db.selectFrom('turnchart_messages').selectAll().where('turn_id', 'in', turnIds).where('role', '=', 'assistant').orderBy('id').execute()
    return rows.map(messageFromRow)
  }
}

const upsertMessageQuery = precompiledQuery(['id', 'session_id', 'turn_id', 'role', 'summary', 'created_at', 'data'], (db, v) =>
  db
    .insertInto('turnchart_messages')
    .values(v as never)
    .onConflict((oc) => oc.column('id').doUpdateSet((eb) => ({ data: eb.ref('excluded.data') }))),
)

/** Rows per parts statement: one SQL text (and prepared statement) per row count up to it. */
const maxPartsPerStatement = 64
const upsertPartsQueries = new Map<number, ReturnType<typeof buildUpsertParts>>()

function upsertPartsQuery(rows: number): ReturnType<typeof buildUpsertParts> {
  let query = upsertPartsQueries.get(rows)
  if (!query) upsertPartsQueries.set(rows, (query = buildUpsertParts(rows)))
  return query
}

function buildUpsertParts(rows: number) {
  // (upsertParts lists the values in this order)
  const columns = ['id', 'session', 'message', 'type', 'data', 'at'] as const
  const names = Array.from({ length: rows }, (_, i) => columns.map((c) => `${c}${i}`)).flat()
  return precompiledQuery(names, (db, v) =>
    db
      .insertInto('turnchart_parts')
      .values(
        Array.from({ length: rows }, (_, i) => ({
          id: v[`id${i}`] as string,
          session_id: v[`session${i}`] as string,
          message_id: v[`message${i}`] as string,
          type: v[`type${i}`] as string,
          data: v[`data${i}`] as string,
          updated_at: v[`at${i}`] as number,
        })),
      )
      .onConflict((oc) => oc.column('id').doUpdateSet((eb) => ({ data: eb.ref('excluded.data'), updated_at: eb.ref('excluded.updated_at') }))),
  )
}
