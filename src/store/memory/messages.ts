/**
 * Messages and parts in memory, as the SQL rows hold them: a message's id, session, turn, role
 * and summary flag apart and the rest of its info as JSON; a part's id, session, message and
 * type apart and the rest as JSON. An upsert of an existing row replaces its JSON only (and a
 * part's update time), as the SQL `on conflict do update` does.
 */
import type { MessageInfo, MessageWithParts, Part } from '../../core/types'
import type { MessageStore } from '../store'
import type { Access } from './access'
import { compareIds, foreignKeyViolation, toJson, type MessageRow, type PartRow, type Tables } from './tables'

function messageData(info: MessageInfo): string {
  const { id: _id, sessionId: _s, role: _r, turnId: _t, summary: _su, ...rest } = info
  return toJson(rest)
}

function partData(part: Part): string {
  const { id: _id, sessionId: _session, messageId: _message, type: _type, ...rest } = part
  return toJson(rest)
}

function messageFromRow(row: MessageRow): MessageInfo {
  return {
    ...(JSON.parse(row.data) as Omit<MessageInfo, 'id' | 'sessionId' | 'role'>),
    id: row.id,
    sessionId: row.sessionId,
    role: row.role,
    ...(row.turnId ? { turnId: row.turnId } : {}),
    ...(row.summary ? { summary: true } : {}),
  }
}

function partFromRow(row: PartRow): Part {
  return { id: row.id, sessionId: row.sessionId, messageId: row.messageId, type: row.type, ...JSON.parse(row.data) } as Part
}

const byId = (a: { id: string }, b: { id: string }) => compareIds(a.id, b.id)

export class MemoryMessages implements MessageStore {
  constructor(private readonly db: Access) {}

  upsert(info: MessageInfo): Promise<void> {
    return this.db.run((t) => {
      const existing = t.messages.get(info.id)
      if (existing) {
        t.put('messages', info.id, { ...existing, data: messageData(info) })
        return
      }
      if (!t.sessions.has(info.sessionId)) throw foreignKeyViolation('turnchart_messages', 'session_id', info.sessionId)
      t.put('messages', info.id, {
        id: info.id,
        sessionId: info.sessionId,
        turnId: info.turnId ?? null,
        role: info.role,
        summary: info.summary === true,
        created: info.time.created,
        data: messageData(info),
      })
    })
  }

  upsertParts(parts: Part[], now: number): Promise<void> {
    return this.db.run((t) => {
      for (const part of parts) {
        const existing = t.parts.get(part.id)
        if (existing) {
          t.put('parts', part.id, { ...existing, data: partData(part), updatedAt: now })
          continue
        }
        if (!t.sessions.has(part.sessionId)) throw foreignKeyViolation('turnchart_parts', 'session_id', part.sessionId)
        if (!t.messages.has(part.messageId)) throw foreignKeyViolation('turnchart_parts', 'message_id', part.messageId)
        t.put('parts', part.id, { id: part.id, sessionId: part.sessionId, messageId: part.messageId, type: part.type, data: partData(part), updatedAt: now })
      }
    })
  }

  list(sessionId: string, options: { fromLatestSummary?: boolean } = {}): Promise<MessageWithParts[]> {
    return this.db.run((t) => {
      const from = options.fromLatestSummary ? latestSummary(t, sessionId) : undefined
      const after = (id: string) => from === undefined || compareIds(id, from) >= 0
      const messages = [...t.messages.values()].filter((m) => m.sessionId === sessionId && after(m.id)).sort(byId)
      const parts = [...t.parts.values()].filter((p) => p.sessionId === sessionId && after(p.messageId)).sort(byId)
      const byMessage = new Map<string, Part[]>()
      for (const row of parts) {
        const list = byMessage.get(row.messageId)
        if (list) list.push(partFromRow(row))
        else byMessage.set(row.messageId, [partFromRow(row)])
      }
      return messages.map((row) => ({ info: messageFromRow(row), parts: byMessage.get(row.id) ?? [] }))
    })
  }

  exists(sessionId: string, messageId: string): Promise<boolean> {
    return this.db.run((t) => t.messages.get(messageId)?.sessionId === sessionId)
  }

  deleteAfter(sessionId: string, messageId: string): Promise<void> {
    return this.db.run((t) => {
      for (const row of [...t.parts.values()]) if (row.sessionId === sessionId && compareIds(row.messageId, messageId) > 0) t.remove('parts', row.id)
      for (const row of [...t.messages.values()]) if (row.sessionId === sessionId && compareIds(row.id, messageId) > 0) t.remove('messages', row.id)
    })
  }

  assistantInfos(turnIds: string[]): Promise<MessageInfo[]> {
    return this.db.run((t) => {
      const turns = new Set(turnIds)
      return [...t.messages.values()]
        .filter((m) => m.turnId !== null && turns.has(m.turnId) && m.role === 'assistant')
        .sort(byId)
        .map(messageFromRow)
    })
  }
}

/** The id of the session's latest summary message, if it has one. */
function latestSummary(t: Tables, sessionId: string): string | undefined {
  let latest: string | undefined
  for (const m of t.messages.values()) if (m.sessionId === sessionId && m.summary && (latest === undefined || compareIds(m.id, latest) > 0)) latest = m.id
  return latest
}
