/**
 * The `Engine` interface: the calls on sessions, on stored turns, on running turns (control)
 * and prompts, each group declared in its own file, and the engine's own lifecycle.
 */
import type { WaitingCalls } from './waiting-calls'
import type { ModelHealthCalls } from './model-health'
import type { ResolvedConfig } from '../config/resolved-config'
import type { Listener } from '../core/bus'
import type { Turn } from '../turn/turn-handle'
import type { BackupCalls } from './backup-call'
import type { ControlCalls } from './control-calls'
import type { PromptCalls } from './prompt-calls'
import type { ScheduleCalls } from './schedule-calls'
import type { SessionCalls } from './session-calls'
import type { EngineNotifications } from './store-feeds'
import type { TurnLogCalls } from './turn-log-calls'
import type { UpgradeCalls } from './upgrade-check'

/** The reads of `followHandedOff`: as the engine's own, working until `release()` (then as a closed engine's). */
export interface HandedOffReader extends Pick<SessionCalls, 'messages'>, Pick<TurnLogCalls, 'getTurn' | 'transitions'> {
  release(): void
}

/** How `engine.close` ends the engine's running turns. */
export interface CloseOptions {
  /** End them `aborted`. */
  abortTurns?: boolean
  /** Hand them to the other engines at their next step gate (a deploy). */
  handoff?: boolean
  /** How long a handoff waits for a turn's next step gate (ms, default 20000); past it, the turn stops where it is. */
  handoffTimeoutMs?: number
}

/** What an engine holds in memory now (`engine.stats()`): for tests and dashboards. */
export interface EngineStats {
  /** Turn actors alive in this engine (each running or waiting turn it holds has one; a parked turn none). */
  actors: number
  /** Turns whose lease this engine renews. */
  leases: number
  /** Timers this engine holds for waiting turns (a parked turn has none; a running turn's own timers end with its actor). */
  timers: number
  /** Recovery passes run since the engine opened: on open, each sweep (`recovery.intervalMs`), each `recover()`. */
  sweeps: number
  /** Turns' writes waiting on the database now (an outage: `storage.outageMs`). */
  storageWaits: number
  /** Turns this engine found stalled since it opened (`turn.stalled`: stopped here and left for recovery; docs/durability.md). */
  stalled: number
}

export interface Engine extends SessionCalls, PromptCalls, ScheduleCalls, ControlCalls, TurnLogCalls, BackupCalls, UpgradeCalls, WaitingCalls, ModelHealthCalls {
  /** What the engine holds in memory now: its turns' actors, leases and timers, and the sweeps run. */
  stats(): EngineStats
  /** Receives every event; returns the function that unsubscribes. */
  subscribe(listener: Listener): () => void
  /**
   * Stops this engine: every running turn stops where it is, its pending writes land, and it
   * stays open in the database (released, so the next engine on the database resumes it; a
   * turn awaiting approval goes on waiting there). With `{ abortTurns: true }` the turns are
   * aborted instead. Then closes the database if turnchart opened it.
   *
   * `{ handoff: true }` (a deploy): no new work is taken; each running turn goes on to its next
   * step gate (between two model calls: nothing in flight, nothing paid twice), where its row is
   * written and it is released, one turn at a time as each gets there; a turn waiting on a
   * person (approval) or a retry's delay is released at once. On PostgreSQL the release notifies
   * the other engines, and the first to hear it resumes the turn at once (no lease wait). A turn
   * that has not reached a gate within `handoffTimeoutMs` (default 20000) stops where it is, as
   * without `handoff`. `done` of a handed-off turn rejects with `EngineClosedError`.
   * `handoff` with `abortTurns` is an `InvalidOptionError`.
   */
  close(options?: CloseOptions): Promise<void>
  /**
   * Finds unfinished turns left by a process that died (or whose lease ran out), claims them,
   * and resumes or ends each per `recovery.policy`. Runs on open unless `recovery.onOpen` is
   * false. Returns the turns it took over.
   */
  recover(): Promise<Turn[]>
  /**
   * For a stream this engine served of a turn it handed off (`close({ handoff: true })`): the
   * reads that follow the turn in the database while another engine runs it, and `release`.
   * `close` keeps the database open until every such reader is released (the stream ended with
   * its turn, or its client left). Undefined once the database is closed. `createChatHandler`
   * uses it: a browser's response goes on through the new owner's rows.
   */
  followHandedOff(): HandedOffReader | undefined
  /** The resolved configuration (defaults filled in). */
  readonly config: ResolvedConfig
  /**
   * The engine's listening connection (PostgreSQL notifications), or undefined when it polls
   * (SQLite, a `MemoryStore`, `notifications: false`, a Kysely instance without a listening
   * URL). `createChatHandler` follows a session's rows through it to resume a turn another
   * engine runs as soon as that engine writes.
   */
  readonly notifications: EngineNotifications | undefined
}
