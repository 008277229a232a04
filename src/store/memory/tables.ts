/**
 * The memory store's tables: one Map per SQL table, keyed by its primary key, each row shaped
 * like the SQL row (columns apart, JSON columns as JSON text). Keeping the JSON as text is what
 * makes every read a fresh copy, and makes a value come back as it would from SQLite or
 * PostgreSQL (an `undefined` field dropped, a Date as its ISO string), which a structured clone
 * would not.
 *
 * Every write goes through `put` / `remove`, which note the row they replace in the journal of
 * the running call or transaction, so a throw can put everything back.
 */
import type { TurnOutcome } from '../../core/types'
import type { CircuitRecord, ControlRequest, ScheduleRecord } from '../store'

export interface SessionRow {
  id: string
  title: string | null
  created: number
  updated: number
  /** JSON text or null. */
  defaults: string | null
  revertedTo: string | null
  /** JSON text or null. */
  metadata: string | null
  /** Run trees: the parent session of a child session. */
  parentId: string | null
  tenant: string | null
  /** JSON text or null: where a fork came from (`engine.forkTurn`). */
  forkedFrom: string | null
}

export interface MessageRow {
  id: string
  sessionId: string
  turnId: string | null
  role: 'user' | 'assistant'
  summary: boolean
  created: number
  /** JSON text: the rest of the message's info. */
  data: string
}

export interface PartRow {
  id: string
  sessionId: string
  messageId: string
  type: string
  /** JSON text: the rest of the part. */
  data: string
  updatedAt: number
}

export interface TurnRow {
  id: string
  sessionId: string
  state: string
  outcome: TurnOutcome | null
  step: number
  attempt: number
  retryAt: number | null
  /** JSON text or null. */
  error: string | null
  /** JSON text: the chart input. */
  input: string
  created: number
  updated: number
  owner: string | null
  leaseUntil: number | null
  epoch: number
  /** JSON text (StoredTurnOptions) or null. */
  options: string | null
  /** JSON text (TurnUsage) or null. */
  usage: string | null
  /** Run trees: the parent turn and its call, and the tree's root (null on a root). */
  parentTurnId: string | null
  parentCallId: string | null
  rootTurnId: string | null
}

export interface TransitionRow {
  turnId: string
  seq: number
  from: string
  event: string
  /** JSON text. */
  payload: string
  to: string
  at: number
  /** JSON text of the part ids, or null when there were none. */
  parts: string | null
  /** JSON text of the outages waited out, or null. */
  storageWaits: string | null
}

export interface ControlRow extends Omit<ControlRequest, 'input' | 'by'> {
  by: string | null
  handledAt: number | null
  result: string | null
  /** JSON text, or null. */
  input: string | null
}

export interface QueueRow {
  id: string
  sessionId: string
  /** JSON text. */
  input: string
  /** JSON text. */
  options: string
  created: number
  kind: 'prompt' | 'steer'
  /** JSON text, or null. */
  schedule: string | null
}

export interface SpendingRow {
  rootTurnId: string
  input: number
  output: number
  cost: number
  steps: number
  updated: number
}

/** A schedule, as the record (replaced whole on each write: the journal keeps the old one). */
export type ScheduleRow = ScheduleRecord

/** A model's circuit, as the record (replaced whole on each write). */
export type CircuitRow = CircuitRecord

/** The one row of the starts' lock (key `'1'`): the tenant served last (`''`: a session without one). */
export interface SlotRow {
  lastTenant: string
}

export interface Rows {
  sessions: SessionRow
  messages: MessageRow
  parts: PartRow
  turns: TurnRow
  transitions: TransitionRow
  controls: ControlRow
  queue: QueueRow
  spending: SpendingRow
  slots: SlotRow
  schedules: ScheduleRow
  circuits: CircuitRow
}

export type TableName = keyof Rows

/** One undo step: the row a key held before a write (undefined: it had none). */
interface Undo {
  table: TableName
  key: string
  before: Rows[TableName] | undefined
}

/** The rows a call or a transaction replaced, newest last: undone in reverse on a throw. */
export class Journal {
  readonly entries: Undo[] = []
}

/** The key of a transition row: its SQL primary key (turn_id, seq). */
export function transitionKey(turnId: string, seq: number): string {
  return JSON.stringify([turnId, seq])
}

/** The tables, written through one journal at a time (the running call's or transaction's). */
export class Tables {
  readonly sessions = new Map<string, SessionRow>()
  readonly messages = new Map<string, MessageRow>()
  readonly parts = new Map<string, PartRow>()
  readonly turns = new Map<string, TurnRow>()
  readonly transitions = new Map<string, TransitionRow>()
  readonly controls = new Map<string, ControlRow>()
  readonly queue = new Map<string, QueueRow>()
  readonly spending = new Map<string, SpendingRow>()
  readonly slots = new Map<string, SlotRow>()
  readonly schedules = new Map<string, ScheduleRow>()
  readonly circuits = new Map<string, CircuitRow>()
  /** Set while a call or transaction runs (the store's mutex makes it one at a time). */
  journal: Journal | undefined

  /** Sets a row (rows are replaced, never changed in place, so the journal's copy stays the old row). */
  put<T extends TableName>(table: T, key: string, row: Rows[T]): void {
    const map = this[table] as Map<string, Rows[T]>
    this.journal?.entries.push({ table, key, before: map.get(key) })
    map.set(key, row)
  }

  remove(table: TableName, key: string): boolean {
    const map = this[table] as Map<string, Rows[TableName]>
    const before = map.get(key)
    if (before === undefined) return false
    this.journal?.entries.push({ table, key, before })
    map.delete(key)
    return true
  }

  /** Puts back every row written since the journal had `mark` entries. */
  undo(journal: Journal, mark = 0): void {
    while (journal.entries.length > mark) {
      const { table, key, before } = journal.entries.pop()!
      const map = this[table] as Map<string, Rows[TableName]>
      if (before === undefined) map.delete(key)
      else map.set(key, before)
    }
  }
}

/** A JSON column's text (what the SQL stores write with `JSON.stringify`). */
export function toJson(value: unknown): string {
  return JSON.stringify(value)
}

/** A nullable JSON column, parsed. */
export function parseJsonOrNull<T>(value: string | null | undefined): T | null {
  return value ? (JSON.parse(value) as T) : null
}

/** The error a SQL primary key gives a second row with the same key (SQLite's wording). */
export function uniqueViolation(table: string, columns: string): Error {
  return new Error(`UNIQUE constraint failed: ${table}.${columns} (duplicate key)`)
}

/** The error a SQL foreign key gives a row whose parent does not exist (SQLite's wording). */
export function foreignKeyViolation(table: string, column: string, value: string): Error {
  return new Error(`FOREIGN KEY constraint failed: ${table}.${column} = ${value} references no row`)
}

/**
 * Ids compared as SQLite (BINARY) and PostgreSQL (collation "C") compare them: by code unit,
 * which for the ASCII ids turnchart makes is byte order.
 */
export function compareIds(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0
}
