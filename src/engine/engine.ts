/**
 * The `Engine` interface: the calls on sessions, on stored turns, on running turns (control)
 * and prompts, each group declared in its own file, and the engine's own lifecycle.
 */
import type { ResolvedConfig } from '../config/resolved-config'
import type { Listener } from '../core/bus'
import type { Turn } from '../turn/turn-handle'
import type { BackupCalls } from './backup-call'
import type { ControlCalls } from './control-calls'
import type { PromptCalls } from './prompt-calls'
import type { SessionCalls } from './session-calls'
import type { EngineNotifications } from './store-feeds'
import type { TurnLogCalls } from './turn-log-calls'
import type { UpgradeCalls } from './upgrade-check'

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
}

export interface Engine extends SessionCalls, PromptCalls, ControlCalls, TurnLogCalls, BackupCalls, UpgradeCalls {
  /** What the engine holds in memory now: its turns' actors, leases and timers, and the sweeps run. */
  stats(): EngineStats
  /** Receives every event; returns the function that unsubscribes. */
  subscribe(listener: Listener): () => void
  /**
   * Stops this engine: every running turn stops where it is, its pending writes land, and it
   * stays open in the database (released, so the next engine on the database resumes it at
   * once; a turn awaiting approval goes on waiting there). With `{ abortTurns: true }` the
   * turns are aborted instead. Then closes the database if turnchart opened it.
   */
  close(options?: { abortTurns?: boolean }): Promise<void>
  /**
   * Finds unfinished turns left by a process that died (or whose lease ran out), claims them,
   * and resumes or ends each per `recovery.policy`. Runs on open unless `recovery.onOpen` is
   * false. Returns the turns it took over.
   */
  recover(): Promise<Turn[]>
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
