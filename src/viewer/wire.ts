/**
 * What the viewer's server sends its page (JSON, over the live event stream and the API):
 * shared by the server's views and the page's script, so it holds types only.
 */
import type { MessageInfo, Part, SessionInfo, StorageWaited, TurnRecord } from '../core/types'
import type { TurnStall } from '../../machines/turn.types'

export interface SessionSummary extends SessionInfo {
  messages: number
  turns: Array<{ id: string; state: string; outcome: string | null }>
}

/** One logged transition and the drawn edges it took (`chartGraph()` ids; none when the chart has no edge for it). */
export interface PathStep {
  seq: number
  from: string
  to: string
  event: string
  time: number
  edges: string[]
  /** The database outages the turn waited out before this row was written (its own write included). */
  storageWaits?: StorageWaited[]
  /** The stall this row logged (`turn.crashed { stalled }`): its engine found the turn stalled and let it go for recovery. */
  stalled?: TurnStall
  /** What the state the row entered means, as the chart says it (`meta.work`, `meta.wait`); absent for the step gate's and final states. */
  into?: StateMeaning
  /** What the row says beyond its event: a fallback to another model, the error a failed attempt ended with. */
  note?: string
}

/** What the turn does in a state (its work and what bounds it) or waits for there, as the chart says it. */
export type StateMeaning = { kind: 'work'; bound: 'model' | 'tools' | 'retry-delay' | 'storage'; label: string } | { kind: 'wait'; label: string }

export interface TurnView extends TurnRecord {
  /** The transition log, each row with its edges on the drawing. */
  path: PathStep[]
  /** In a waiting state (the chart's `meta.wait`): what the turn waits for, as the page says it. */
  waitingFor?: string
  /** In a retry's delay (the chart's `meta.work.attempt`): what the attempt it waits for is called. */
  retrying?: string
  /** Why the log could not be replayed through the chart (its rows are then drawn on the first edge that fits). */
  mismatch?: string
  /** Structured output: the final answer's parsed object (from the log's `gate.complete` row). */
  output?: unknown
  /** The child turns its tools started (run trees), oldest first: drawn under it, each with its chart. */
  children?: TurnView[]
  /** A child turn's messages (those of its child session); a session's own turns have theirs in `SessionPage.messages`. */
  messages?: PageMessage[]
}

export interface PageMessage {
  info: MessageInfo
  parts: PagePart[]
}

/** A part as the page shows it: a file's bytes are left out (their size is kept). */
export type PagePart = Exclude<Part, { type: 'file' }> | (Extract<Part, { type: 'file' }> & { bytes?: number })

export interface SessionPage {
  session: SessionInfo
  messages: PageMessage[]
  turns: TurnView[]
  /** The session's schedules (`engine.schedule`), oldest first. */
  schedules: ScheduleLine[]
}

/** A schedule as the page lists it: `when` says its rule (`every 500 ms`, `cron '0 9 * * 1' Europe/Berlin`, `at …`). */
export interface ScheduleLine {
  id: string
  when: string
  next: number | null
  paused: boolean
  missed: number
  lastTurnId?: string
}

/** The events of `GET /api/live` (server-sent events), by name. */
export interface LiveEvents {
  /** Every session, oldest first: at once, then whenever the list changes. */
  sessions: SessionSummary[]
  /** The watched session: at once, then whenever it changes. */
  session: SessionPage
  /** The watched session is not in the database. */
  missing: { session: string }
  /** The database could not be read; the stream stays open and tries again at the next change. */
  failure: { message: string }
}
