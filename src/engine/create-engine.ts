/**
 * `createEngine`: opens the store, validates the options, and runs turns: one at a time per
 * session, as many sessions at once as the caller likes. It composes the engine's parts: the
 * store (engine-store.ts), the running turns and their leases (running-turns.ts), the session,
 * turn-log and control calls (engine-sessions.ts, engine-turn-log.ts, engine-control.ts).
 */
import { Bus, type Listener } from '../core/bus'
import { resolveConfig, type EngineOptions, type ResolvedConfig } from '../config/resolve-config'
import { EngineClosedError, InvalidArgumentError, QueuedPromptCancelledError, SessionBusyError } from '../core/errors/errors'
import { engineCalls } from './engine-calls'
import { engineControl } from './control-calls'
import { sessionCalls } from './session-calls'
import { openEngineStore } from './open-store'
import { turnLogCalls } from './turn-log-calls'
import { renewLeases, RunningTurns } from './running-turns'
import { sessionStatuses } from './session-statuses'
import { checkToolSchemas } from '../tools/json-schema-validator'
import { requireFunction, requireId } from '../core/arguments'
import { recoverTurns, newOwnerId } from '../turn/recovery/recover-turns'
import type { ReplayStep } from '../turn/replay'
import { startTurn, type RunningTurn, type Turn, type TurnDeps } from '../turn/run-turn'
import type { MessageWithParts, SessionInfo, SessionStatus, SessionUsage, TransitionRecord, TurnRecord } from '../core/types'
import type { PromptOptions, SessionDefaults } from '../core/types'
import type { HistoryDeps } from '../conversation/history'
import { turnRequest } from '../conversation/turn-options'
import { userParts, type PromptInput } from '../conversation/user-input'
import { PromptQueue, type QueuedPrompt } from '../conversation/prompt-queue'
import type { QueuedPromptRecord } from '../store/store'

/** What `prompt` does on a busy session. */
export type WhenBusy = 'reject' | 'enqueue' | 'interrupt'

export interface Engine {
  /**
   * Creates a session (a conversation), with defaults for its turns: `system`, `model` and
   * `tools` (registered names) and call `settings`. Stored; a prompt's options win over them. `id` lets a caller choose it (e.g. a chat id from a web page).
   */
  createSession(options?: { title?: string; id?: string } & SessionDefaults): Promise<SessionInfo>
  /** Renames a session. Refused with `SessionBusyError` while it runs a turn. */
  updateSession(sessionId: string, changes: { title?: string | null }): Promise<SessionInfo>
  /** Deletes a session with its messages, parts, turns and logs. Refused with `SessionBusyError` while it runs a turn. */
  deleteSession(sessionId: string): Promise<void>
  /**
   * Hides the messages after `messageId` from `messages()` and the model; `unrevert` shows them
   * again, the next prompt deletes them. Refused with `SessionBusyError` while a turn runs.
   */
  revert(sessionId: string, messageId: string): Promise<SessionInfo>
  /** Undoes `revert` (before the next prompt). */
  unrevert(sessionId: string): Promise<SessionInfo>
  /** A new session holding a copy of the history up to and including `messageId`. Refused with `SessionBusyError` while a turn runs. */
  fork(sessionId: string, messageId: string, options?: { title?: string | null }): Promise<SessionInfo>
  /** Tokens and cost of the session: total and per turn, compactions included. */
  usage(sessionId: string): Promise<SessionUsage>
  /** A session by id, or undefined when the database does not hold it (a lookup). */
  getSession(sessionId: string): Promise<SessionInfo | undefined>
  /** All sessions, oldest first. */
  listSessions(): Promise<SessionInfo[]>
  /**
   * Starts a turn. `input` is text or an AI SDK user message content (text, image and file
   * parts); `options` are the turn's model and tools (registered names), system prompt, call
   * settings and `maxSteps`. Throws `SessionBusyError` when the session already runs a turn
   * (turns are not queued), `EngineClosedError` after `close()`, `InvalidArgumentError` for a
   * bad input or option, `FileTooLargeError` for bytes over `maxFileBytes`. `whenBusy`:
   * `'reject'` (default) throws `SessionBusyError` on a busy session; `'interrupt'` aborts the
   * turn this engine runs on the session first (one run by another engine makes `done` reject
   * with `SessionBusyError`).
   * An unknown session id makes `turn.done` reject with `SessionNotFoundError`.
   */
  prompt(sessionId: string, input: PromptInput, options?: PromptOptions & { whenBusy?: 'reject' | 'interrupt' }): Turn
  /**
   * With `whenBusy: 'enqueue'`: stores the prompt and starts it when the session is idle (at
   * once if it is), in order, from any engine on the database, also after a crash. Returns the
   * queued prompt's handle: `{ id, sessionId, done, cancel() }`.
   */
  prompt(sessionId: string, input: PromptInput, options: PromptOptions & { whenBusy: 'enqueue' }): QueuedPrompt
  /** The session's queued prompts, oldest first: `{ id, sessionId, input, options, time }`. */
  queue(sessionId: string): Promise<QueuedPromptRecord[]>
  /** Cancels a queued prompt by id; false when its turn already started (or there is no such prompt). */
  cancelQueued(id: string): Promise<boolean>
  /**
   * Approves a tool call of a turn in `awaiting-approval`. Works from any engine on the
   * database: a turn whose engine is gone is taken over first; a turn another live engine runs
   * gets a stored request that engine applies within `controlPollIntervalMs` (this resolves
   * once it did). Throws `ApprovalNotPendingError` when the call is not waiting for approval.
   */
  approve(turnId: string, callId: string): Promise<void>
  /** Denies such a call: its part becomes an error carrying `reason`, and the model sees it. */
  deny(turnId: string, callId: string, reason?: string): Promise<void>
  /** Aborts the session's running turn, if any, whichever engine runs it; resolves when it has ended. */
  abort(sessionId: string): Promise<void>
  /** The running turn of a session, if any. */
  activeTurn(sessionId: string): Turn | undefined
  /**
   * What the session is doing now, from this engine's memory (synchronous, no database read):
   * `idle` for any session this engine runs no turn of, whether or not the session exists.
   */
  status(sessionId: string): SessionStatus
  /**
   * What the session is doing, read from the database: answers for a turn any engine runs,
   * with the calls waiting for a decision in `awaiting-approval`.
   */
  readStatus(sessionId: string): Promise<SessionStatus>
  /** Messages with parts, in order, read from the database. Throws `SessionNotFoundError` for an unknown session. */
  messages(sessionId: string): Promise<MessageWithParts[]>
  /** The persisted transition log of a turn, in order. Throws `TurnNotFoundError` for an unknown turn. */
  transitions(turnId: string): Promise<TransitionRecord[]>
  /** The persisted record of a turn, or undefined when the database does not hold it (a lookup). */
  getTurn(turnId: string): Promise<TurnRecord | undefined>
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
  /**
   * The turn's state sequence rebuilt from its transition log with the chart's pure
   * `transition()`. Throws `ReplayMismatchError` at a row the chart would not have taken,
   * `TurnNotFoundError` for an unknown turn.
   */
  replay(turnId: string): Promise<ReplayStep[]>
  /** Deletes the transition logs of turns that ended before `olderThan` (a Date or ms); messages and parts stay. Returns the rows deleted. */
  prune(options: { olderThan: Date | number }): Promise<number>
  /** The resolved configuration (defaults filled in). */
  readonly config: ResolvedConfig
}

/**
 * Creates an engine. Invalid options fail here with an `InvalidOptionError` naming the option.
 *
 * @example
 * import { createEngine } from 'turnchart'
 * const engine = await createEngine({ database: './agent.db', model, limits: { context: 128000, output: 8192 } })
 * const session = await engine.createSession()
 * const turn = engine.prompt(session.id, 'hi')
 * console.log(await turn.done) // { outcome: 'completed', ... }
 */
export async function createEngine(options: EngineOptions): Promise<Engine> {
  const config = resolveConfig(options)
  await checkToolSchemas(config.tools)
  const opened = await openEngineStore(options, config)
  const store = opened.store
  const bus = new Bus(config.onSubscriberError)
  let closed = false
  const owner = newOwnerId()
  const running = new RunningTurns({ busy: (busy) => control.poller.keepAlive(busy), ended: (sessionId) => void queue.drain(sessionId) })
  const deps: TurnDeps = { config, store, bus, owner, onSettled: (turn) => running.untrack(turn) }
  const queue = new PromptQueue({
    store,
    bus,
    config,
    isClosed: () => closed,
    activeTurn: (sessionId) => running.ofSession(sessionId),
    start: (record, headers) => running.track(startQueuedTurn(deps, record, headers)),
  })
  const stopRenewal = renewLeases(store.turns, running, owner, config.leaseMs)
  // Takes over the turns of workers that died while this engine runs (set once `engine` exists).
  let sweep: NodeJS.Timeout | undefined
  // OpenTelemetry turn and state spans follow the published transitions (src/telemetry).
  bus.subscribe((event) => config.telemetry.observe(event))
  const status = sessionStatuses(bus)

  const requireOpen = (operation: string) => {
    if (closed) throw new EngineClosedError(operation)
  }
  // Database work of the methods below: EngineClosedError after close, StorageError for the driver's errors.
  const call = engineCalls(() => closed)
  // Approve, deny and abort from any engine (src/engine-control.ts).
  const control = engineControl({ store, config, running, recover: () => engine.recover(), requireOpen })
  const history: HistoryDeps = { store, runningHere: (sessionId) => running.ofSession(sessionId)?.id }

  const engine: Engine = {
    config,
    ...sessionCalls({ config, store, history, requireOpen, call }),
    ...turnLogCalls({ store, requireOpen, call }),
    ...control.calls,
    prompt: ((sessionId: string, input: PromptInput, promptOptions?: PromptOptions & { whenBusy?: WhenBusy }): Turn | QueuedPrompt => {
      requireOpen('start a turn')
      return promptTurn({ deps, running, queue }, requireId('sessionId', sessionId), input, promptOptions)
    }) as Engine['prompt'],
    queue: (sessionId) => call('list queued prompts', () => queue.list(requireId('sessionId', sessionId))),
    cancelQueued: (id) => call('cancel a queued prompt', () => queue.cancel(requireId('id', id))),
    activeTurn(sessionId) {
      requireOpen('get the active turn')
      return running.ofSession(requireId('sessionId', sessionId))
    },
    status(sessionId) {
      requireOpen('get a session status')
      return status(requireId('sessionId', sessionId))
    },
    subscribe(listener) {
      requireOpen('subscribe')
      return bus.subscribe(requireFunction('listener', listener))
    },
    async recover() {
      requireOpen('recover turns')
      const here = new Set(running.all().map((t) => t.id))
      const turns = (await recoverTurns(deps, (id) => here.has(id))).map((turn) => running.track(turn))
      // Resolved once each resumed turn's resumption is in its log: its row shows the state it resumed in.
      await Promise.all(turns.map((turn) => turn.recorded()))
      // Queues that stand still (the engine that would have started them died): start them here.
      for (const sessionId of await store.queue.idleSessions()) void queue.drain(sessionId)
      return turns
    },
    async close(closeOptions = {}) {
      if (closed) return
      closed = true
      stopRenewal()
      clearInterval(sweep)
      control.poller.stop()
      queue.close()
      await endTurnsAtClose(running.all(), closeOptions.abortTurns === true)
      await store.turns.release(owner).catch(() => undefined)
      await opened.close()
    },
  }
  if (config.recovery.intervalMs > 0) {
    sweep = setInterval(() => {
      if (!closed) engine.recover().catch(() => undefined)
    }, config.recovery.intervalMs)
    sweep.unref()
  }
  if (config.recovery.onOpen) {
    await engine.recover().catch(async (error: unknown) => {
      stopRenewal()
      clearInterval(sweep)
      control.poller.stop()
      await opened.close()
      throw error
    })
  }
  return engine
}

/** Starts a queued prompt's turn: the queue row is taken with the turn's insert, so of two engines one starts it. */
function startQueuedTurn(deps: TurnDeps, record: QueuedPromptRecord, headers: Record<string, string> | undefined): RunningTurn {
  const request = turnRequest(deps.config, record.sessionId, headers ? { ...record.options, headers } : record.options)
  return startTurn(deps, record.sessionId, record.input, {
    ...request,
    turnId: record.id,
    async prepare(tx, scope) {
      if (!(await tx.queue.take(record.id))) throw new QueuedPromptCancelledError(record.sessionId, record.id)
      await request.prepare?.(tx, scope)
    },
  })
}

/**
 * `prompt`: a turn now, or queued (`whenBusy: 'enqueue'`); on a busy session it is refused
 * (`reject`) or interrupts the running turn, starting once that one has ended (`interrupt`).
 */
function promptTurn(
  engine: { deps: TurnDeps; running: RunningTurns; queue: PromptQueue },
  sessionId: string,
  input: PromptInput,
  options: (PromptOptions & { whenBusy?: WhenBusy }) | undefined,
): Turn | QueuedPrompt {
  const { deps, running, queue } = engine
  const parts = userParts(input, deps.config.maxFileBytes)
  const { whenBusy = 'reject', ...callOptions } = options ?? {}
  if (!['reject', 'enqueue', 'interrupt'].includes(whenBusy)) throw new InvalidArgumentError('options.whenBusy', whenBusy, "'reject', 'enqueue' or 'interrupt'")
  const request = turnRequest(deps.config, sessionId, callOptions)
  if (whenBusy === 'enqueue') return queue.enqueue(sessionId, parts, callOptions)
  const current = running.ofSession(sessionId)
  if (current && whenBusy === 'reject') throw new SessionBusyError(sessionId, current.id)
  if (current) {
    current.abort('interrupted by a new prompt')
    request.before = () => current.done.then(() => undefined, () => undefined)
  }
  return running.track(startTurn(deps, sessionId, parts, request))
}

/**
 * The engine's turns at close: aborted (`abortTurns`), or detached, each staying in the state
 * its last committed row names (awaiting-approval included) for the next engine to resume.
 */
async function endTurnsAtClose(turns: RunningTurn[], abort: boolean): Promise<void> {
  if (abort) {
    for (const turn of turns) turn.abort('engine closed')
    await Promise.all(turns.map((turn) => turn.done.catch(() => undefined)))
  } else {
    await Promise.all(turns.map((turn) => turn.detach()))
  }
}
