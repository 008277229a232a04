/**
 * The store contract: every read and write the engine makes, grouped by aggregate (sessions,
 * messages and parts, turns, transitions, queued prompts, control requests). The runner,
 * recovery, control, the queue and the conversation calls talk only to this interface.
 *
 * Implementations: Kysely on SQLite and PostgreSQL (`kysely/`, one code path for every SQL
 * backend), `MemoryStore` (`memory/`, no database), and any third party's store given as the
 * `database` option (docs/stores.md). One conformance suite (`storeConformance` of
 * `turnchart/testing`) holds every implementation to the same behaviour.
 *
 * Rules every implementation keeps:
 * - `transaction(fn)` runs `fn` against a store bound to one transaction: its writes commit
 *   together, or none does when `fn` throws; nothing it wrote is read from outside before it
 *   commits. On SQLite and in memory, calls and transactions run one at a time (a call made
 *   while a transaction runs waits for it); on PostgreSQL they run at once on the pool, and the
 *   row locks of fenced writes and claims order the writes to one turn. A write that throws
 *   inside a transaction must end it (PostgreSQL refuses the rest of a transaction that had an
 *   error): let the error out of `fn`.
 * - A fenced write (`turns.update` with a fence, `turns.checkFence`) succeeds only while the
 *   turn is unfinished and still owned by `fence.owner` at `fence.epoch`; otherwise it throws
 *   `TurnOwnershipLostError` and changes nothing.
 * - Keys and references as the SQL schema has them: a second session, turn, queued prompt,
 *   control request or transition (turn, seq) with the same key throws an error whose message
 *   says unique or duplicate; a message, turn or queued prompt needs its session, a part its
 *   session and message, a transition or control request its turn (else the error says foreign key).
 * - Lists come back in id order (ids are time-sortable), sessions in creation order (then id).
 * - Values are copies: changing an object after writing it, or one read back, changes nothing
 *   stored. JSON fields round-trip as JSON does (a field set to undefined is dropped).
 */
import type { MessageInfo, MessageWithParts, Part, PromptOptions, ScheduleOccurrence, SessionInfo, StoredTurnOptions, TransitionRecord, TurnOutcome, TurnRecord, TurnUsage, UserPartDraft } from '../core/types'
import type { SerializedError } from '../core/errors'

/** Who may write a running turn: its owner at the epoch of its claim (the fencing token). */
export interface TurnFence {
  owner: string
  epoch: number
}

/** What a claim expects of the turn's row: its owner and epoch, and the lease it was decided on. */
export interface ClaimExpectation {
  owner: string | null
  epoch: number
  /** The lease read (null: none); absent: the lease is not compared. */
  leaseUntil?: number | null
}

/** What a transition changes on its turn's row. */
export interface TurnUpdate {
  state: string
  outcome?: TurnOutcome | null
  step: number
  attempt: number
  retryAt: number | null
  error: SerializedError | null
  /** A final row's: the turn's usage (its steps and compactions), written with it. Absent: the usage stays as it is. */
  usage?: TurnUsage
}

/** An unfinished turn's owner and lease (a session holds at most one such turn). */
export interface OpenTurn {
  id: string
  owner: string | null
  leaseUntil: number | null
}

/** A prompt waiting for its session to be idle (`whenBusy: 'enqueue'`). */
export interface QueuedPromptRecord {
  /** The id its turn will have. */
  id: string
  sessionId: string
  input: UserPartDraft[]
  /** Its options, without headers and stop conditions (never stored). */
  options: PromptOptions
  time: { created: number }
  /**
   * `steer`: the session's running turn takes it at its next model call, as a user message; a
   * steer that no running turn took starts a turn like a prompt. Absent: a prompt.
   */
  kind?: 'prompt' | 'steer'
  /** The schedule and occurrence (epoch ms) that queued it; its turn stores them (`options.schedule`). */
  schedule?: ScheduleOccurrence
}

/** A request to a turn from any engine (approve, deny, abort, resolve a waiting call), applied by the engine that runs it. */
export interface ControlRequest {
  id: string
  turnId: string
  /** `resolve`: `engine.resolveCall`, its resolution (`{ output } | { error } | { retry: true }`) in `input`. */
  kind: 'approve' | 'deny' | 'abort' | 'resolve'
  callId: string | null
  reason: string | null
  createdAt: number
  /** An approval's edited input (absent: the model's input, as it is); a `resolve`'s resolution. */
  input?: unknown
  /** Who approved or denied (the `by` of `approve` / `deny`), kept on the call's receipt. */
  by?: string
}

export interface SessionStore {
  /** Inserts a session with its defaults and metadata (JSON, returned by `get` and `list` as given). */
  insert(session: SessionInfo): Promise<void>
  get(id: string): Promise<SessionInfo | undefined>
  /** Every session, oldest first; child sessions (run trees: `parentSessionId` set) only with `{ children: true }`. */
  list(options?: { children?: boolean }): Promise<SessionInfo[]>
  /** The sessions whose `parentSessionId` is one of `ids` (one level), oldest first. */
  children(ids: string[]): Promise<SessionInfo[]>
  /**
   * Takes the session's write lock for the current transaction (so two engines cannot both
   * start a turn on it). False when the session does not exist.
   */
  lock(id: string, now: number): Promise<boolean>
  /** Sets the title (null clears it). False when there is no such session. */
  setTitle(id: string, title: string | null, now: number): Promise<boolean>
  /** Sets (a message id) or clears (null) the revert marker. */
  setRevertedTo(id: string, messageId: string | null, now: number): Promise<void>
  /**
   * Deletes the session with its messages, parts, turns, transition logs and queued prompts,
   * and its child sessions (run trees), theirs, and so on, with theirs. False when there was none.
   */
  delete(id: string): Promise<boolean>
}

export interface MessageStore {
  /**
   * Inserts a message, or replaces the changing fields (time, error, finish, usage) of one that
   * exists: its id, session, role, turn and summary flag stay as first written.
   */
  upsert(info: MessageInfo): Promise<void>
  /** Inserts or replaces parts (by id); a replaced part keeps its session, message and type. A part given twice is written as given last. */
  upsertParts(parts: Part[], now: number): Promise<void>
  /**
   * A session's messages with their parts, in order. With `fromLatestSummary`, from the latest
   * compaction summary on (what the model is sent).
   */
  list(sessionId: string, options?: { fromLatestSummary?: boolean }): Promise<MessageWithParts[]>
  exists(sessionId: string, messageId: string): Promise<boolean>
  /** Deletes the session's messages (and their parts) after `messageId`. */
  deleteAfter(sessionId: string, messageId: string): Promise<void>
  /** The assistant messages' info of these turns (usage sums), in order. */
  assistantInfos(turnIds: string[]): Promise<MessageInfo[]>
}

/** A descendant turn of a run tree, with what its usage sums need. */
export interface TreeTurn {
  id: string
  parentTurnId: string
  sessionId: string
  step: number
  /** The usage written at its end (null while it runs, or when it was never written). */
  usage: TurnUsage | null
}

export interface TurnStore {
  /**
   * Inserts a turn row with its chart input (what replaying its log needs). A child turn
   * (`parentTurnId`, `parentCallId`, `rootTurnId` set) is unique per parent call: a second
   * child of the same call throws a unique error.
   */
  insert(turn: TurnRecord, input: unknown): Promise<void>
  /** The direct child turns of a turn (run trees), oldest first. */
  children(turnId: string): Promise<TurnRecord[]>
  /** The child turn a parent's tool call started, if any. */
  childOfCall(parentTurnId: string, callId: string): Promise<TurnRecord | undefined>
  /** Every descendant of these turns (children, theirs, …), each with its parent, oldest first. */
  descendants(turnIds: string[]): Promise<TreeTurn[]>
  /**
   * Updates a turn's row. With `fence`, only while that engine still owns the unfinished turn
   * at that epoch; otherwise throws `TurnOwnershipLostError` and changes nothing.
   */
  update(id: string, update: TurnUpdate, now: number, fence?: TurnFence): Promise<void>
  /** Throws `TurnOwnershipLostError` unless `fence` still holds on the unfinished turn. */
  checkFence(id: string, fence: TurnFence): Promise<void>
  get(id: string): Promise<TurnRecord | undefined>
  /** The chart input stored with the turn; undefined for an unknown turn. */
  input(id: string): Promise<unknown>
  /** The session's unfinished turn, if any (run by this or another engine, or left by a crash). */
  openOfSession(sessionId: string): Promise<OpenTurn | undefined>
  /** Every unfinished turn with its chart input, oldest first. */
  open(): Promise<Array<TurnRecord & { input: unknown }>>
  /**
   * The unfinished turns whose stored deadline (`retryAt`: a retry's, a waiting call's, an
   * approval's) is at or before `now`, oldest first, without their inputs: what a deadline sweep
   * reads (the open turns' index, not every open turn's input).
   */
  due(now: number): Promise<TurnRecord[]>
  /**
   * The earliest stored deadline after `after` of the unfinished turns in one of `states`, or
   * null: what the engine's one deadline timer is armed for (a parked turn holds no timer of its
   * own). Optional: without it, such a deadline waits for the next recovery sweep.
   */
  nextDeadline?(states: readonly string[], after: number): Promise<number | null>
  /**
   * Compare-and-set of the owner: succeeds only while the turn is unfinished, owned by
   * `expected.owner` at `expected.epoch` (and, when `expected.leaseUntil` is given, with that
   * lease still: a claim decided on a lease read earlier fails if its owner renewed it since);
   * then the epoch is incremented and the new fence returned.
   */
  claim(id: string, expected: ClaimExpectation, owner: string, leaseUntil: number | null): Promise<TurnFence | null>
  /**
   * Extends the leases of `owner`'s unfinished turns still at the epochs given (a turn claimed
   * again since, even by `owner`, is left as it is); returns the ids renewed.
   */
  renewLeases(turns: Array<{ id: string; epoch: number }>, owner: string, leaseUntil: number): Promise<Set<string>>
  /**
   * Clears `owner`'s claim on every unfinished turn it holds (a clean close), or only on those
   * of `turnIds` (a turn handed off at its step gate, `close({ handoff: true })`), so that another
   * engine may claim them at once. On PostgreSQL each turn released notifies the listening
   * engines (postgres/notify-triggers.ts).
   */
  release(owner: string, turnIds?: readonly string[]): Promise<void>
  setOptions(id: string, options: StoredTurnOptions): Promise<void>
  /** The call options stored with a turn (null when none were). */
  options(id: string): Promise<StoredTurnOptions | null>
  /** The session's turns, oldest first, with the usage written at their end (`TurnUpdate.usage`; null while running or when it was never written). */
  usages(sessionId: string): Promise<Array<{ id: string; usage: TurnUsage | null }>>
}

export interface TransitionStore {
  append(record: TransitionRecord): Promise<void>
  /** A turn's log, in seq order. */
  list(turnId: string): Promise<TransitionRecord[]>
  /**
   * Deletes the logs of turns that ended before `before`, a child turn's only once its tree's
   * root turn also ended before `before` (a tree's logs go together); returns the rows deleted.
   */
  deleteFinished(before: number): Promise<number>
}

export interface QueueStore {
  insert(record: QueuedPromptRecord): Promise<void>
  get(id: string): Promise<QueuedPromptRecord | undefined>
  /** The session's queued prompts, oldest first. */
  list(sessionId: string): Promise<QueuedPromptRecord[]>
  oldest(sessionId: string): Promise<QueuedPromptRecord | undefined>
  /** Deletes a queued prompt; true when it was still there (it is the caller's now). */
  take(id: string): Promise<boolean>
  /** Deletes and returns the session's steers, oldest first (the running turn takes them). */
  takeSteers(sessionId: string): Promise<QueuedPromptRecord[]>
  /** Sessions with queued prompts and no unfinished turn: their queue should be moving. */
  idleSessions(): Promise<string[]>
  /**
   * Capability: a mark that changes whenever a prompt or a steer may have been queued (through
   * this store, or by another connection where the store can tell): a caller that read a
   * session's queue at one mark need not read it again while the mark is the same. Absent when
   * the store cannot tell (another process may write unseen): read every time; undefined while
   * it cannot tell.
   */
  changeMark?(): string | number | undefined
}

/** When a schedule's occurrences fall: once, every interval from a first time, or on a cron expression in a time zone. */
export type ScheduleRule = { at: number } | { every: number; from: number } | { cron: string; timezone: string }

/**
 * Which missed occurrences a schedule fires when it is found late (its engines were down):
 * `'latest'` the last one only, `'none'` none, a number (ms) the last one when it is no older.
 */
export type CatchUp = 'latest' | 'none' | number

/** A stored schedule (`engine.schedule`): it starts a turn on its session at each occurrence. */
export interface ScheduleRecord {
  id: string
  sessionId: string
  input: UserPartDraft[]
  /** The turn's options, as a queued prompt's (never headers or stop conditions). */
  options: PromptOptions
  rule: ScheduleRule
  catchUp: CatchUp
  /** The next occurrence (epoch ms); null when there is none (a one-time schedule that fired). */
  next: number | null
  /** The last occurrence fired, and the turn it queued. */
  last: number | null
  lastTurnId: string | null
  /** Occurrences passed without a turn (the engines were down, or the catch-up left them). */
  missed: number
  paused: boolean
  time: { created: number }
}

/** What a claim of an occurrence writes: where the schedule goes next, and what it fired or missed. */
export type ScheduleAdvance = Pick<ScheduleRecord, 'next' | 'last' | 'lastTurnId' | 'missed'>

/**
 * Stored schedules (`engine.schedule`). An occurrence is claimed by the transaction that queues
 * its turn: of engines that reach it together, one claims it (`claim` compares the occurrence).
 */
export interface ScheduleStore {
  /** Stores a schedule unless one with its id exists; returns the stored one (the same id twice is one schedule). */
  insert(record: ScheduleRecord): Promise<ScheduleRecord>
  get(id: string): Promise<ScheduleRecord | undefined>
  /** Schedules, oldest first; of one session when given. */
  list(sessionId?: string): Promise<ScheduleRecord[]>
  /** Deletes a schedule; true when it was there. */
  delete(id: string): Promise<boolean>
  /** Pauses or resumes a schedule (resumed: from `next`); true when it was there. */
  setPaused(id: string, paused: boolean, next: number | null): Promise<boolean>
  /** Schedules not paused whose next occurrence is at or before `now`. */
  due(now: number): Promise<ScheduleRecord[]>
  /** The earliest next occurrence of the schedules not paused. */
  nextDue(): Promise<number | undefined>
  /** Moves the schedule on from occurrence `at` (still its next, not paused); true when this call did (the occurrence is the caller's). */
  claim(id: string, at: number, advance: ScheduleAdvance): Promise<boolean>
}

/**
 * A model's circuit (`circuitBreaker`), as every engine on the database sees it: the provider's
 * failures counted in a window, and while `openUntil` is ahead no request goes to the model.
 * Written by compare-and-set on `version` (a failure counted twice, or a probe taken by two
 * engines, is one write refused).
 */
export interface CircuitRecord {
  /** The model's registered name. */
  model: string
  /** The provider's failures since `since` (the window's start). */
  failures: number
  since: number
  /** Set while the circuit is open or half-open (past it: one probe may ask); null once closed. */
  openUntil: number | null
  /** A half-open circuit's probe: no other request until it answers or this time passes. */
  probeUntil: number | null
  /** The provider said (a `retry-after`) not to ask the model before this time: no engine does. */
  heldUntil: number | null
  /**
   * The requests admitted under the model's rate limit (`rateLimits`) in the last minute, by the
   * second they were admitted in, oldest first (at most 61 entries: a bounded row).
   */
  admitted: AdmittedSecond[]
  version: number
}

/** The requests admitted to a model in one second, and the tokens they are counted for (estimated before, corrected after). */
export interface AdmittedSecond {
  /** The second's start (epoch ms, a multiple of 1000). */
  second: number
  requests: number
  tokens: number
}

/** Models' circuits (`circuitBreaker`): a row per model that ever failed, read before each request. */
export interface CircuitStore {
  get(model: string): Promise<CircuitRecord | undefined>
  /** Every model's row, by name. */
  list(): Promise<CircuitRecord[]>
  /** Writes `record` where the stored row is at `record.version - 1` (version 1: where there is none); false when another write came first. */
  put(record: CircuitRecord): Promise<boolean>
  /**
   * Capability: a mark that changes whenever a circuit may have been written (through this store,
   * or by another connection where the store can tell), as `QueueStore.changeMark`: a step that
   * read its model's circuit at one mark need not read it again while the mark is the same.
   * Undefined while the store cannot tell (PostgreSQL: while its listener does not hear).
   */
  changeMark?(): string | number | undefined
}

export interface ControlStore {
  add(request: ControlRequest): Promise<void>
  /** Requests not yet handled for these turns, oldest first. */
  pending(turnIds: string[]): Promise<ControlRequest[]>
  /** Marks a request handled: applied (`result` null) or refused with the reason. The first mark stands (two appliers of one request: the second's refusal does not undo it). */
  handled(id: string, result: string | null, now: number): Promise<void>
  /** Whether a request was handled yet, and how; undefined for an unknown request. */
  outcome(id: string): Promise<{ handled: boolean; result: string | null } | undefined>
}

/** What a run tree has spent, in the units of a budget (wall time apart: it counts from the root's start). */
export interface TreeSpent {
  tokens: { input: number; output: number }
  cost: number
  /** Model calls made or reserved (a step's call is reserved before it is made). */
  steps: number
}

/**
 * A run tree's spending, kept in the store so that every engine running a part of the tree
 * counts one budget: each engine adds what its turns spend (a model call reserved before it is
 * made, its tokens and cost after) in the transactions that write those turns' rows.
 */
export interface SpendingStore {
  /** What the tree of `rootTurnId` has spent; undefined when nothing was added yet. */
  get(rootTurnId: string): Promise<TreeSpent | undefined>
  /**
   * Adds `delta` to the tree's spending (the row is made by the first add; it goes with the root
   * turn). With `maxSteps`, only if the tree's steps stay within it, judged on the row as it is
   * when the add takes its lock (a conditional write, not a read before it: two engines' adds at
   * the same moment are judged one after the other); false when refused (nothing added).
   */
  add(rootTurnId: string, delta: TreeSpent, now: number, maxSteps?: number): Promise<boolean | void>
}

/**
 * The running turns that `concurrency` limits: unfinished turns of top-level sessions (a run
 * tree's child turns run in their root's slot), not parked ones (`parkedOwner`: a turn waiting
 * on a person that no engine holds), counted under a lock that orders every turn start that
 * checks them (one row's lock, held by the calling transaction until it ends).
 */
export interface SlotStore {
  /**
   * Takes the starts' lock for the current transaction, records `tenant` as the one served last
   * (kept only if the transaction commits: a refused start serves no one), then counts the
   * running turns (but `exceptTurnId`), in all and of `tenant`.
   */
  running(tenant: string | null, exceptTurnId: string): Promise<{ total: number; tenant: number }>
  /** The running turns by tenant (`''`: sessions without one), read without the lock: what a queue's fair dequeue plans from. */
  byTenant(): Promise<Map<string, number>>
  /** The tenant whose turn took a slot last, on any engine (`''`: a session without one; undefined: none yet): where every engine's round robin goes on from. */
  servedLast(): Promise<string | undefined>
}

export interface Store {
  readonly sessions: SessionStore
  readonly messages: MessageStore
  readonly turns: TurnStore
  readonly transitions: TransitionStore
  readonly queue: QueueStore
  readonly controls: ControlStore
  /**
   * Capability: run trees' spending kept in the store (one budget across engines). Absent (a
   * store of a version before it): each engine counts a tree's budget from what it sees.
   */
  readonly spending?: SpendingStore
  /** Capability: the running turns the `concurrency` option limits. Absent: that option is refused at `createEngine`. */
  readonly slots?: SlotStore
  /** Capability: stored schedules (`engine.schedule`). Absent: scheduling is refused. */
  readonly schedules?: ScheduleStore
  /** Capability: models' circuits shared by the engines on the database. Absent: each engine keeps its own. */
  readonly circuits?: CircuitStore
  /**
   * Runs `fn` in one transaction with a store bound to it: its writes commit together, or none
   * does when `fn` throws. Called on a store already bound to a transaction, `fn` joins it.
   *
   * @example
   * await store.transaction(async (tx) => { await tx.messages.upsertParts(parts, now); await tx.transitions.append(row) })
   */
  transaction<T>(fn: (tx: Store) => Promise<T>, options?: TransactionOptions): Promise<T>
}

/** How a transaction may be run (a store may ignore what it cannot do). */
export interface TransactionOptions {
  /**
   * Its commit may wait for other transactions asked for at the same time and share theirs
   * (group commit, where the store has it): for a write nobody waits on, such as streamed
   * text's interval flush. It still succeeds or fails alone.
   */
  shared?: boolean
}

/** A store an engine opened, with the way to close what it opened. */
export interface OpenedStore {
  store: Store
  /** The name of the backend that opened it: `sqlite`, `node:sqlite`, `postgres`, `memory`, or `store` (a store of the caller's). */
  dialect: string
  /** PostgreSQL: the schema turnchart's tables are in (its notifications' channel is named after it). */
  schema?: () => Promise<string>
  /** Capability: an online backup of the whole database into the new file `to` (SQLite); absent when the backend has none. */
  backup?(to: string): Promise<void>
  /** Closes the connection when turnchart opened it; a caller's Kysely instance or store stays open. */
  close(): Promise<void>
}
