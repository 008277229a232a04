/**
 * The Kysely `Database` interface of turnchart's tables. JSON is stored as TEXT and parsed
 * explicitly by the repository (a plugin that parses any JSON-looking string would also parse
 * a text part whose content happens to be JSON). Times are epoch milliseconds.
 */
import type { ColumnType, Generated } from 'kysely'

type Millis = ColumnType<number, number, number>

export interface SessionTable {
  id: string
  title: string | null
  created_at: Millis
  updated_at: Millis
  /** JSON: the session's defaults (system, model, tools, settings); null when none. */
  defaults: ColumnType<string | null, string | null | undefined, string | null>
  /** Id of the last message still shown after `engine.revert`; later ones are hidden until the next prompt deletes them. */
  reverted_to: ColumnType<string | null, string | null | undefined, string | null>
  /** JSON: the app's metadata of the session (`createSession({ metadata })`); null when none. */
  metadata: ColumnType<string | null, string | null | undefined, string | null>
  /** Run trees: the session of the turn whose tool call started this child session; null for a top-level session. */
  parent_id: ColumnType<string | null, string | null | undefined, string | null>
  /** The tenant the session belongs to (`createSession({ tenant })`); null when none. */
  tenant: ColumnType<string | null, string | null | undefined, string | null>
  /** JSON: where a fork came from (`engine.forkTurn`: session, turn, step); null otherwise. */
  forked_from: ColumnType<string | null, string | null | undefined, string | null>
}

export interface MessageTable {
  id: string
  session_id: string
  turn_id: string | null
  role: 'user' | 'assistant'
  /** 1 on a compaction summary message: history sent to the model starts at the latest one. */
  summary: number
  created_at: Millis
  /** JSON: the rest of MessageInfo (time.completed, error, finish, tokens, cost). */
  data: string
}

export interface PartTable {
  id: string
  session_id: string
  message_id: string
  type: string
  /** JSON: the whole Part. */
  data: string
  updated_at: Millis
}

export interface TurnTable {
  id: string
  session_id: string
  state: string
  outcome: string | null
  step: number
  attempt: number
  retry_at: Millis | null
  /** JSON SerializedError or null. */
  error: string | null
  /** JSON: the chart input of the turn (needed to replay its log). */
  input: string
  created_at: Millis
  updated_at: Millis
  /** Engine instance running the turn: `host:pid:random`. */
  owner: string | null
  /** The owner's lease on the turn ends at this time; another engine may then recover it. */
  lease_until: Millis | null
  /** Fencing token: incremented by each claim; writes of a running turn require it unchanged. */
  epoch: Generated<number>
  /** JSON: the turn's call options (model and tool names, system, settings; never headers). */
  options: ColumnType<string | null, string | null | undefined, string | null>
  /** JSON: the turn's usage totals, written when it ends. */
  usage: ColumnType<string | null, string | null | undefined, string | null>
  /** Run trees: the turn whose tool call started this child turn, that call's id, and the tree's root turn (null on a root). */
  parent_turn_id: ColumnType<string | null, string | null | undefined, string | null>
  parent_call_id: ColumnType<string | null, string | null | undefined, string | null>
  root_turn_id: ColumnType<string | null, string | null | undefined, string | null>
}

export interface TransitionTable {
  turn_id: string
  seq: number
  from_state: string
  event_type: string
  /** JSON: the event payload (control data only). */
  payload: string
  to_state: string
  at: Millis
  /** JSON array of the ids of the parts written with this transition. */
  parts: string | null
  /** JSON array of the database outages waited out before this row was written (`TransitionRecord.storageWaits`). */
  storage_waits: ColumnType<string | null, string | null | undefined, string | null>
}

/** Requests to a turn from any engine (approve, deny, abort), applied by the engine that runs it. */
export interface ControlTable {
  id: string
  turn_id: string
  kind: 'approve' | 'deny' | 'abort' | 'resolve'
  call_id: string | null
  reason: string | null
  created_at: Millis
  /** When the running engine applied it (or refused it: `result` says why). */
  handled_at: Millis | null
  /** null: applied; otherwise why it could not be (the call was no longer pending, …). */
  result: string | null
  /** JSON: an approval's edited input (null: the model's input is approved as it is). */
  input: ColumnType<string | null, string | null | undefined, string | null>
  /** Who decided (`approve` / `deny`'s `by`), for the call's receipt; null when nobody said. */
  decided_by: ColumnType<string | null, string | null | undefined, string | null>
}

export interface QueueTable {
  /** The id the prompt's turn will have. */
  id: string
  session_id: string
  /** JSON: the prompt's parts (text, files). */
  input: string
  /** JSON: the prompt's options, without headers. */
  options: string
  created_at: Millis
  /** `prompt` (waits for the session to be idle) or `steer` (taken by the running turn at its next model call, else a prompt). */
  kind: ColumnType<'prompt' | 'steer', 'prompt' | 'steer' | undefined, 'prompt' | 'steer'>
  /** JSON: the schedule and occurrence that queued it (`{ id, occurrence }`); null for a prompt of the app's. */
  schedule: ColumnType<string | null, string | null | undefined, string | null>
}

/** A run tree's spending (one budget across engines), keyed by its root turn; deleted with it. */
export interface TreeSpendingTable {
  root_turn_id: string
  input_tokens: number
  output_tokens: number
  cost: number
  steps: number
  updated_at: Millis
}

/** One row (id 1): the lock that orders turn starts checking `concurrency` (its update holds the row until commit). */
export interface SlotsTable {
  id: number
  starts: number
  /** The tenant of the turn that took a slot last (`''`: a session without one); null before any. */
  last_tenant: string | null
}

/** A schedule (`engine.schedule`): see `ScheduleRecord`. */
export interface ScheduleTable {
  id: string
  session_id: string
  /** JSON: the prompt's parts. */
  input: string
  /** JSON: the turn's options. */
  options: string
  /** JSON: `ScheduleRule`. */
  rule: string
  /** JSON: `CatchUp`. */
  catch_up: string
  next_at: ColumnType<number | null, number | null, number | null>
  last_at: ColumnType<number | null, number | null, number | null>
  last_turn_id: string | null
  missed: number
  /** 1 while paused. */
  paused: number
  created_at: Millis
}

/** A model's circuit (`CircuitRecord`). */
export interface CircuitTable {
  model: string
  failures: number
  since: Millis
  open_until: ColumnType<number | null, number | null, number | null>
  probe_until: ColumnType<number | null, number | null, number | null>
  held_until: ColumnType<number | null, number | null, number | null>
  /** `CircuitRecord.admitted`, as JSON. */
  admitted: string
  version: number
}

export interface MigrationTable {
  name: string
  applied_at: Millis
}

export interface TurnchartDatabase {
  turnchart_sessions: SessionTable
  turnchart_messages: MessageTable
  turnchart_parts: PartTable
  turnchart_turns: TurnTable
  turnchart_transitions: TransitionTable
  turnchart_controls: ControlTable
  turnchart_migrations: MigrationTable
  turnchart_queue: QueueTable
  turnchart_tree_spending: TreeSpendingTable
  turnchart_slots: SlotsTable
  turnchart_schedules: ScheduleTable
  turnchart_circuits: CircuitTable
}
