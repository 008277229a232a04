/**
 * The hosting seam's vocabulary: what a host of turns gives the engine (`TurnHost`) and what it
 * gets back of a turn's run (`TurnPause`), in JSON a host can journal.
 */
import type { SerializedError } from '../core/errors'
import type { PromptOptions, SessionStatus } from '../core/types'
import type { PromptInput } from '../conversation/user-input'

/**
 * A host of turns: a runtime that runs a session's turns one at a time, runs a turn again when its
 * run died, and awaits a turn's pauses itself (its own durable promises and timers) instead of the
 * engine's leases, recovery sweep and deadline timer. turnchart's own engines (`createEngine`) are
 * the other way of running turns; `turnchart/restate` is a host.
 *
 * What a host must do, with `HostedTurns`:
 * - run a turn with `runUntilPause` until it ends, and each time it pauses: on `waiting`, run it
 *   again once a control is stored for it (`approve`, `deny`, `resolveCall`, `abort` tell the host
 *   to, or `hasPendingControl` says one came first) or its `deadline` passes; on `children`, run
 *   each child turn (`runUntilPause` of its session, `{ turn }`) and then the parent again;
 * - when a process running a turn dies, run it again (in any process): the new run claims the
 *   turn, and the old one, if it still lives, can write nothing more (the fence);
 * - run a session's steers no turn took (`steer` says `open: false`, `steersLeft`) as prompts `{ queued }`.
 */
export interface TurnHost {
  /**
   * The owner the host's turns name in the store while they run: the host's own (e.g.
   * `turnchart:restate`), never an engine's. They hold no lease, so no engine's recovery sweep
   * takes them over: the host runs them again.
   */
  owner: string
}

/** How a hosted turn ended (JSON: a host may journal it). */
export interface HostedTurnResult {
  turnId: string
  outcome: 'completed' | 'failed' | 'aborted'
  /** The text of its last step. */
  text: string
  /** Why it failed or was aborted. */
  error?: SerializedError
}

/** A child turn its parent waits on: the host runs it (`runUntilPause(sessionId, turnId, { turn: turnId })`). */
export interface ChildCall {
  sessionId: string
  turnId: string
}

/**
 * Where a turn stopped running: it ended, or it waits (parked) for a control, or for its
 * `deadline` (the earliest of what it waits on: an approval's expiry, a deferred call's timeout,
 * a sleep's end), when it has one; or it waits on child turns the host is to run.
 */
export type TurnPause = { kind: 'ended'; result: HostedTurnResult } | { kind: 'waiting'; state: string; deadline?: number } | { kind: 'children'; children: ChildCall[] }

/**
 * What a run runs: a prompt with its options, a queued steer (its queue row's id, the turn's),
 * or a child turn its parent's `agentTool` call started (`turn`: its id).
 */
export type HostedPrompt = { input: PromptInput; options?: PromptOptions } | { queued: string } | { turn: string }

/** An open turn of a run tree as `status` lists it. */
export interface HostedTurnStatus {
  sessionId: string
  turnId: string
  state: string
  /** What it waits for, when it waits (the chart's `meta.wait.awaits`: a `decision`, a call's `result`, or a `time`). */
  awaits?: string
}

/**
 * A session's status, read from the store: `engine.readStatus`'s, and with a turn open, the open
 * turns below it in its run tree (`children`: where to send their approvals).
 */
export type HostedSessionStatus = { type: 'idle' } | (Exclude<SessionStatus, { type: 'idle' }> & { children?: HostedTurnStatus[] })
