/**
 * `createEngine`: opens the store, validates the options, and runs turns: one at a time per
 * session, as many sessions at once as the caller likes.
 */
import { Bus, type Listener } from './bus'
import { startControlPoller } from './control/control-poller'
import { readStatus } from './control/read-status'
import { requestAbort, requestDecision, type RemoteControlDeps } from './control/remote-control'
import { ControlRequests } from './store/control-requests'
import { resolveConfig, type EngineOptions, type ResolvedConfig } from './config'
import { EngineClosedError, InvalidArgumentError, QueuedPromptCancelledError, SessionBusyError, SessionNotFoundError, TurnNotFoundError, TurnOwnershipLostError } from './errors'
import { asStorageError, engineCalls } from './engine-calls'
import { newId } from './ids'
import { checkToolSchemas } from './tools/json-schema-validator'
import { optionalString, requireFunction, requireId, sessionOptions } from './arguments'
import { migrate } from './store/migrations'
import { openDatabase, type OpenedDatabase } from './store/open-database'
import { GroupCommit } from './store/group-commit'
import { Repository } from './store/repository'
import { recoverTurns, newOwnerId } from './turn/recover-turns'
import { replayTransitions, type ReplayStep } from './turn/replay'
import { startTurn, type RunningTurn, type Turn, type TurnDeps } from './turn/start-turn'
import type { TurnInput } from '../machines/turn.types'
import type { MessageWithParts, SessionInfo, SessionStatus, SessionUsage, TransitionRecord, TurnRecord } from './types'
import { validateSessionDefaults, type PromptOptions, type SessionDefaults } from './prompt/call-settings'
import { deleteSession, fork, revert, sessionUsage, unrevert, updateSession, visibleMessages, type HistoryDeps } from './conversation/history'
import { turnRequest } from './conversation/turn-options'
import { userParts, type PromptInput } from './prompt/user-input'
import { PromptQueue, type QueuedPrompt } from './conversation/prompt-queue'
import { idleSessionsWithQueue, takeQueued, type QueuedPromptRecord } from './store/queue-store'

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
  let opened: OpenedDatabase
  try {
    opened = openDatabase(options.database, { busyTimeoutMs: options.busyTimeoutMs, idleInTransactionTimeoutMs: config.leaseMs })
  } catch (error) {
    throw asStorageError('open the database', error)
  }
  try {
    await migrate(opened.db, opened.dialect)
  } catch (error) {
    await opened.close()
    throw asStorageError('migrate the database', error)
  }
  // SQLite runs one transaction at a time anyway: those of concurrent turns share commits.
  const group = opened.dialect === 'sqlite' ? new GroupCommit(opened.db, opened.verify) : undefined
  const repo = new Repository(opened.db, opened.verify, group)
  const bus = new Bus(config.onSubscriberError)
  const active = new Map<string, RunningTurn>()
  const statuses = new Map<string, SessionStatus>()
  let closed = false
  const owner = newOwnerId()
  // A turn is active from its start until it settles (its runtime calls onSettled before `done` settles).
  const track = (turn: RunningTurn) => {
    active.set(turn.sessionId, turn)
    poller.keepAlive(true)
    // When a turn ends, the session's next queued prompt starts (in this engine).
    turn.done.then(() => queue.drain(turn.sessionId), () => undefined)
    return turn
  }
  const untrack = (turn: RunningTurn) => {
    if (active.get(turn.sessionId) === turn) active.delete(turn.sessionId)
    poller.keepAlive(active.size > 0)
  }
  const deps: TurnDeps = { config, repo, bus, owner, onSettled: untrack }
  const history: HistoryDeps = { repo, runningHere: (sessionId) => active.get(sessionId)?.id }
  const queue = new PromptQueue({
    repo,
    bus,
    config,
    isClosed: () => closed,
    activeTurn: (sessionId) => active.get(sessionId),
    start(record, headers) {
      const request = turnRequest(config, record.sessionId, headers ? { ...record.options, headers } : record.options)
      return track(
        startTurn(deps, record.sessionId, record.input, {
          ...request,
          turnId: record.id,
          async prepare(tx, scope) {
            // The queue row is taken with the turn's insert: of two engines, one starts it.
            if (!(await takeQueued(tx, record.id))) throw new QueuedPromptCancelledError(record.sessionId, record.id)
            await request.prepare?.(tx, scope)
          },
        }),
      )
    },
  })
  // Renew the leases of the turns this engine runs, so no other engine takes them over. A turn
  // whose lease could not be renewed belongs to another engine now: it stops here.
  const renewal = setInterval(() => {
    const turns = [...active.values()].filter((t) => t.begun)
    repo.renewLeases(turns.map((t) => ({ id: t.id, epoch: t.fence.epoch })), owner, Date.now() + config.leaseMs).then(
      (renewed) => {
        for (const turn of turns) if (!renewed.has(turn.id) && turn.begun) turn.lose(new TurnOwnershipLostError(turn.id, owner, 'its lease could not be renewed'))
      },
      () => undefined, // the database is unreachable: the next renewal tries again
    )
  }, Math.max(50, Math.floor(config.leaseMs / 3)))
  renewal.unref()
  // Takes over the turns of workers that died while this engine runs (set once `engine` exists).
  let sweep: NodeJS.Timeout | undefined

  // OpenTelemetry turn and state spans follow the published transitions (src/telemetry).
  bus.subscribe((event) => config.telemetry.observe(event))
  bus.subscribe((event) => {
    if (event.type !== 'session.status') return
    if (event.status.type === 'idle') statuses.delete(event.sessionId)
    else statuses.set(event.sessionId, event.status)
  })

  const requireOpen = (operation: string) => {
    if (closed) throw new EngineClosedError(operation)
  }
  // Database work of the methods below: EngineClosedError after close, StorageError for the driver's errors.
  const call = engineCalls(() => closed)

  // Approve, deny and abort from any engine: requests stored for the engine running the turn.
  const requests = new ControlRequests(opened.db)
  const remote: RemoteControlDeps = {
    repo,
    requests,
    localTurn: (turnId) => [...active.values()].find((t) => t.id === turnId),
    recover: () => engine.recover(),
    waitMs: config.leaseMs + 2 * config.controlPollIntervalMs,
    checkEveryMs: Math.max(10, Math.floor(config.controlPollIntervalMs / 4)),
  }
  const poller = startControlPoller({
    requests,
    running: () => [...active.values()].filter((t) => t.begun),
    intervalMs: config.controlPollIntervalMs,
    onError: () => undefined, // the database is unreachable: the next poll tries again
  })

  const engine: Engine = {
    config,
    async createSession(options) {
      requireOpen('create a session')
      const { title, id, ...defaults } = sessionOptions(options)
      const now = Date.now()
      if (id !== undefined && (typeof id !== 'string' || !/^[\w.:-]{1,200}$/.test(id))) {
        throw new InvalidArgumentError('id', id, 'a session id of 1-200 letters, digits, _ . : -')
      }
      validateSessionDefaults(config, defaults)
      const session: SessionInfo = {
        id: id ?? newId('ses', now),
        title: title ?? null,
        time: { created: now, updated: now },
        ...(Object.keys(defaults).length ? { defaults } : {}),
      }
      await call('create a session', () => repo.insertSession(session))
      return session
    },
    updateSession(sessionId, changes) {
      requireOpen('update a session')
      return updateSession(history, sessionId, changes)
    },
    deleteSession(sessionId) {
      requireOpen('delete a session')
      return deleteSession(history, sessionId)
    },
    revert(sessionId, messageId) {
      requireOpen('revert a session')
      return revert(history, sessionId, messageId)
    },
    unrevert(sessionId) {
      requireOpen('unrevert a session')
      return unrevert(history, sessionId)
    },
    fork(sessionId, messageId, forkOptions) {
      requireOpen('fork a session')
      return fork(history, sessionId, messageId, forkOptions)
    },
    usage: (sessionId) => call('read usage', () => sessionUsage(repo, requireId('sessionId', sessionId))),
    getSession: async (sessionId) => call('get a session', () => repo.getSession(requireId('sessionId', sessionId))),
    listSessions: () => call('list sessions', () => repo.listSessions()),
    prompt: ((sessionId: string, input: PromptInput, promptOptions?: PromptOptions & { whenBusy?: WhenBusy }): Turn | QueuedPrompt => {
      requireOpen('start a turn')
      requireId('sessionId', sessionId)
      const parts = userParts(input, config.maxFileBytes)
      const { whenBusy = 'reject', ...callOptions } = promptOptions ?? {}
      if (!['reject', 'enqueue', 'interrupt'].includes(whenBusy)) throw new InvalidArgumentError('options.whenBusy', whenBusy, "'reject', 'enqueue' or 'interrupt'")
      const request = turnRequest(config, sessionId, callOptions)
      if (whenBusy === 'enqueue') return queue.enqueue(sessionId, parts, callOptions)
      const running = active.get(sessionId)
      if (running && whenBusy === 'reject') throw new SessionBusyError(sessionId, running.id)
      if (running) {
        running.abort('interrupted by a new prompt')
        request.before = () => running.done.then(() => undefined, () => undefined)
      }
      return track(startTurn(deps, sessionId, parts, request))
    }) as Engine['prompt'],
    queue: (sessionId) => call('list queued prompts', () => queue.list(requireId('sessionId', sessionId))),
    cancelQueued: (id) => call('cancel a queued prompt', () => queue.cancel(requireId('id', id))),
    async abort(sessionId) {
      requireOpen('abort a turn')
      requireId('sessionId', sessionId)
      const turn = active.get(sessionId)
      if (!turn) await requestAbort(remote, sessionId)
      const now = active.get(sessionId)
      if (!now) return
      now.abort()
      await now.done.catch(() => undefined)
    },
    activeTurn(sessionId) {
      requireOpen('get the active turn')
      return active.get(requireId('sessionId', sessionId))
    },
    status(sessionId) {
      requireOpen('get a session status')
      return statuses.get(requireId('sessionId', sessionId)) ?? { type: 'idle' }
    },
    readStatus: (sessionId) => call('read a session status', () => readStatus(repo, requireId('sessionId', sessionId))),
    messages: (sessionId) =>
      call('read messages', async () => {
        requireId('sessionId', sessionId)
        const session = await repo.getSession(sessionId)
        if (!session) throw new SessionNotFoundError(sessionId)
        return visibleMessages(await repo.messages(sessionId), session.revertedTo)
      }),
    transitions: (turnId) =>
      call('read transitions', async () => {
        requireId('turnId', turnId)
        if (!(await repo.getTurn(turnId))) throw new TurnNotFoundError(turnId)
        return repo.transitions(turnId)
      }),
    getTurn: (turnId) => call('get a turn', async () => repo.getTurn(requireId('turnId', turnId))),
    subscribe(listener) {
      requireOpen('subscribe')
      return bus.subscribe(requireFunction('listener', listener))
    },
    async recover() {
      requireOpen('recover turns')
      const running = new Set([...active.values()].map((t) => t.id))
      const turns = (await recoverTurns(deps, (id) => running.has(id))).map(track)
      // Queues that stand still (the engine that would have started them died): start them here.
      for (const sessionId of await idleSessionsWithQueue(repo)) void queue.drain(sessionId)
      return turns
    },
    async approve(turnId, callId) {
      requireOpen('approve a tool call')
      requireId('turnId', turnId)
      requireId('callId', callId)
      await requestDecision(remote, turnId, callId, 'approve')
    },
    async deny(turnId, callId, reason) {
      requireOpen('deny a tool call')
      requireId('turnId', turnId)
      requireId('callId', callId)
      optionalString('reason', reason)
      await requestDecision(remote, turnId, callId, 'deny', reason)
    },
    replay: (turnId) =>
      call('replay a turn', async () => {
        requireId('turnId', turnId)
        const input = (await repo.turnInput(turnId)) as TurnInput | undefined
        if (!input) throw new TurnNotFoundError(turnId)
        return replayTransitions(input, await repo.transitions(turnId)).steps
      }),
    async prune(options) {
      requireOpen('prune transition logs')
      if (typeof options !== 'object' || options === null) throw new InvalidArgumentError('options', options, 'an object like { olderThan }')
      const { olderThan } = options
      const before = olderThan instanceof Date ? olderThan.getTime() : olderThan
      if (typeof before !== 'number' || !Number.isFinite(before)) throw new InvalidArgumentError('olderThan', olderThan, 'a Date or a time in ms')
      return call('prune transition logs', () => repo.deleteFinishedTransitions(before))
    },
    async close(closeOptions = {}) {
      if (closed) return
      closed = true
      clearInterval(renewal)
      clearInterval(sweep)
      poller.stop()
      queue.close()
      const turns = [...active.values()]
      if (closeOptions.abortTurns) {
        for (const turn of turns) turn.abort('engine closed')
        await Promise.all(turns.map((turn) => turn.done.catch(() => undefined)))
      } else {
        // Each turn stays in the state its last committed row names (awaiting-approval included).
        await Promise.all(turns.map((turn) => turn.detach()))
      }
      await repo.releaseTurns(owner).catch(() => undefined)
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
    try {
      await engine.recover()
    } catch (error) {
      clearInterval(renewal)
      clearInterval(sweep)
      await opened.close()
      throw error
    }
  }
  return engine
}
