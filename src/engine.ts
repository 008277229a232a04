/**
 * `createEngine`: opens the store, validates the options, and runs turns: one at a time per
 * session, as many sessions at once as the caller likes.
 */
import { Bus, type Listener } from './bus'
import { resolveConfig, type EngineOptions, type ResolvedConfig } from './config'
import { ApprovalNotPendingError, EngineClosedError, InvalidArgumentError, SessionBusyError, SessionNotFoundError, TurnNotFoundError, TurnOwnershipLostError } from './errors'
import { asStorageError, engineCalls } from './engine-calls'
import { newId } from './ids'
import { migrate } from './store/migrations'
import { openDatabase, type OpenedDatabase } from './store/open-database'
import { Repository } from './store/repository'
import { recoverTurns, newOwnerId } from './turn/recover-turns'
import { replayTransitions, type ReplayStep } from './turn/replay'
import { startTurn, type RunningTurn, type Turn, type TurnDeps } from './turn/start-turn'
import type { TurnInput } from '../machines/turn.types'
import type { MessageWithParts, SessionInfo, SessionStatus, TransitionRecord, TurnRecord } from './types'

export interface Engine {
  /** Creates a session (a conversation). */
  createSession(options?: { title?: string }): Promise<SessionInfo>
  /** A session by id, or undefined when the database does not hold it (a lookup). */
  getSession(sessionId: string): Promise<SessionInfo | undefined>
  /** All sessions, oldest first. */
  listSessions(): Promise<SessionInfo[]>
  /**
   * Starts a turn. Throws `SessionBusyError` when the session already runs a turn (turns are
   * not queued), `EngineClosedError` after `close()`, `InvalidArgumentError` for a bad prompt.
   * An unknown session id makes `turn.done` reject with `SessionNotFoundError`.
   */
  prompt(sessionId: string, text: string): Turn
  /**
   * Approves a tool call of a turn in `awaiting-approval`. Works from any engine on the
   * database: a turn whose engine is gone is taken over first. Throws
   * `ApprovalNotPendingError` when the call is not waiting for approval.
   */
  approve(turnId: string, callId: string): Promise<void>
  /** Denies such a call: its part becomes an error carrying `reason`, and the model sees it. */
  deny(turnId: string, callId: string, reason?: string): Promise<void>
  /** Aborts the session's running turn, if any; resolves when it has ended. */
  abort(sessionId: string): Promise<void>
  /** The running turn of a session, if any. */
  activeTurn(sessionId: string): Turn | undefined
  /**
   * What the session is doing now, from this engine's memory (synchronous, no database read):
   * `idle` for any session this engine runs no turn of, whether or not the session exists.
   */
  status(sessionId: string): SessionStatus
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
  const repo = new Repository(opened.db, opened.verify)
  const bus = new Bus(config.onSubscriberError)
  const active = new Map<string, RunningTurn>()
  const statuses = new Map<string, SessionStatus>()
  let closed = false
  const owner = newOwnerId()
  // A turn is active from its start until it settles (its runtime calls onSettled before `done` settles).
  const track = (turn: RunningTurn) => {
    active.set(turn.sessionId, turn)
    return turn
  }
  const untrack = (turn: RunningTurn) => {
    if (active.get(turn.sessionId) === turn) active.delete(turn.sessionId)
  }
  const deps: TurnDeps = { config, repo, bus, owner, onSettled: untrack }
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

  const turnAwaitingApproval = async (turnId: string, callId: string): Promise<Turn> => {
    requireOpen('approve or deny a tool call')
    const find = () => [...active.values()].find((t) => t.id === turnId)
    let turn = find()
    if (!turn) {
      await engine.recover() // a turn left waiting by an engine that is gone
      turn = find()
    }
    if (!turn) {
      const record = await repo.getTurn(turnId)
      const why = !record ? 'no such turn' : record.outcome ? `the turn ended (${record.outcome})` : 'another engine runs the turn'
      throw new ApprovalNotPendingError(turnId, callId, why)
    }
    return turn
  }

  const engine: Engine = {
    config,
    async createSession(sessionOptions = {}) {
      requireOpen('create a session')
      const now = Date.now()
      const session: SessionInfo = { id: newId('ses', now), title: sessionOptions.title ?? null, time: { created: now, updated: now } }
      await call('create a session', () => repo.insertSession(session))
      return session
    },
    getSession: (sessionId) => call('get a session', () => repo.getSession(sessionId)),
    listSessions: () => call('list sessions', () => repo.listSessions()),
    prompt(sessionId, text) {
      requireOpen('start a turn')
      if (typeof sessionId !== 'string' || sessionId.length === 0) throw new InvalidArgumentError('sessionId', sessionId, 'a session id')
      if (typeof text !== 'string' || text.trim().length === 0) throw new InvalidArgumentError('text', text, 'a non-empty string')
      const running = active.get(sessionId)
      if (running) throw new SessionBusyError(sessionId, running.id)
      return track(startTurn(deps, sessionId, text))
    },
    async abort(sessionId) {
      requireOpen('abort a turn')
      const turn = active.get(sessionId)
      if (!turn) return
      turn.abort()
      await turn.done.catch(() => undefined)
    },
    activeTurn(sessionId) {
      requireOpen('get the active turn')
      return active.get(sessionId)
    },
    status(sessionId) {
      requireOpen('get a session status')
      return statuses.get(sessionId) ?? { type: 'idle' }
    },
    messages: (sessionId) =>
      call('read messages', async () => {
        if (!(await repo.getSession(sessionId))) throw new SessionNotFoundError(sessionId)
        return repo.messages(sessionId)
      }),
    transitions: (turnId) =>
      call('read transitions', async () => {
        if (!(await repo.getTurn(turnId))) throw new TurnNotFoundError(turnId)
        return repo.transitions(turnId)
      }),
    getTurn: (turnId) => call('get a turn', () => repo.getTurn(turnId)),
    subscribe(listener) {
      requireOpen('subscribe')
      return bus.subscribe(listener)
    },
    async recover() {
      requireOpen('recover turns')
      const running = new Set([...active.values()].map((t) => t.id))
      const turns = await recoverTurns(deps, (id) => running.has(id))
      return turns.map(track)
    },
    async approve(turnId, callId) {
      ;(await turnAwaitingApproval(turnId, callId)).approve(callId)
    },
    async deny(turnId, callId, reason) {
      ;(await turnAwaitingApproval(turnId, callId)).deny(callId, reason)
    },
    replay: (turnId) =>
      call('replay a turn', async () => {
        const input = (await repo.turnInput(turnId)) as TurnInput | undefined
        if (!input) throw new TurnNotFoundError(turnId)
        return replayTransitions(input, await repo.transitions(turnId)).steps
      }),
    async prune({ olderThan }) {
      requireOpen('prune transition logs')
      const before = olderThan instanceof Date ? olderThan.getTime() : olderThan
      if (typeof before !== 'number' || !Number.isFinite(before)) throw new InvalidArgumentError('olderThan', olderThan, 'a Date or a time in ms')
      return call('prune transition logs', () => repo.deleteFinishedTransitions(before))
    },
    async close(closeOptions = {}) {
      if (closed) return
      closed = true
      clearInterval(renewal)
      clearInterval(sweep)
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
