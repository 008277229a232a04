/**
 * `createEngine`: opens the store, validates the options, and runs turns: one at a time per
 * session, as many sessions at once as the caller likes.
 */
import { Bus, type Listener } from './bus'
import { resolveConfig, type EngineOptions, type ResolvedConfig } from './config'
import { EngineClosedError, InvalidArgumentError, SessionBusyError, SessionNotFoundError } from './errors'
import { newId } from './ids'
import { migrate } from './store/migrations'
import { openDatabase, type OpenedDatabase } from './store/open-database'
import { Repository } from './store/repository'
import { startTurn, type Turn } from './turn/start-turn'
import type { MessageWithParts, SessionInfo, SessionStatus, TransitionRecord, TurnRecord } from './types'

export interface Engine {
  /** Creates a session (a conversation). */
  createSession(options?: { title?: string }): Promise<SessionInfo>
  /** A session by id, or undefined. */
  getSession(sessionId: string): Promise<SessionInfo | undefined>
  /** All sessions, oldest first. */
  listSessions(): Promise<SessionInfo[]>
  /**
   * Starts a turn. Throws `SessionBusyError` when the session already runs a turn (turns are
   * not queued), `EngineClosedError` after `close()`, `InvalidArgumentError` for a bad prompt.
   * An unknown session id makes `turn.done` reject with `SessionNotFoundError`.
   */
  prompt(sessionId: string, text: string): Turn
  /** Aborts the session's running turn, if any; resolves when it has ended. */
  abort(sessionId: string): Promise<void>
  /** The running turn of a session, if any. */
  activeTurn(sessionId: string): Turn | undefined
  /** What the session is doing now. */
  status(sessionId: string): SessionStatus
  /** Messages with parts, in order, read from the database. */
  messages(sessionId: string): Promise<MessageWithParts[]>
  /** The persisted transition log of a turn, in order. */
  transitions(turnId: string): Promise<TransitionRecord[]>
  /** The persisted record of a turn. */
  getTurn(turnId: string): Promise<TurnRecord | undefined>
  /** Receives every event; returns the function that unsubscribes. */
  subscribe(listener: Listener): () => void
  /** Aborts running turns, waits for their rows, and closes the database if turnchart opened it. */
  close(): Promise<void>
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
  const opened: OpenedDatabase = openDatabase(options.database, { busyTimeoutMs: options.busyTimeoutMs })
  try {
    await migrate(opened.db, opened.dialect)
  } catch (error) {
    await opened.close()
    throw error
  }
  const repo = new Repository(opened.db)
  const bus = new Bus(config.onSubscriberError)
  const active = new Map<string, Turn>()
  const statuses = new Map<string, SessionStatus>()
  let closed = false

  bus.subscribe((event) => {
    if (event.type !== 'session.status') return
    if (event.status.type === 'idle') statuses.delete(event.sessionId)
    else statuses.set(event.sessionId, event.status)
  })

  const requireOpen = (operation: string) => {
    if (closed) throw new EngineClosedError(operation)
  }

  const engine: Engine = {
    config,
    async createSession(sessionOptions = {}) {
      requireOpen('create a session')
      const now = Date.now()
      const session: SessionInfo = { id: newId('ses', now), title: sessionOptions.title ?? null, time: { created: now, updated: now } }
      await repo.insertSession(session)
      return session
    },
    getSession: (sessionId) => repo.getSession(sessionId),
    listSessions: () => repo.listSessions(),
    prompt(sessionId, text) {
      requireOpen('start a turn')
      if (typeof sessionId !== 'string' || sessionId.length === 0) throw new InvalidArgumentError('sessionId', sessionId, 'a session id')
      if (typeof text !== 'string' || text.trim().length === 0) throw new InvalidArgumentError('text', text, 'a non-empty string')
      const running = active.get(sessionId)
      if (running) throw new SessionBusyError(sessionId, running.id)
      const turn = startTurn({ config, repo, bus, onSettled: (t) => active.get(sessionId) === t && active.delete(sessionId) }, sessionId, text)
      active.set(sessionId, turn)
      return turn
    },
    async abort(sessionId) {
      const turn = active.get(sessionId)
      if (!turn) return
      turn.abort()
      await turn.done.catch(() => undefined)
    },
    activeTurn: (sessionId) => active.get(sessionId),
    status: (sessionId) => statuses.get(sessionId) ?? { type: 'idle' },
    async messages(sessionId) {
      if (!(await repo.getSession(sessionId))) throw new SessionNotFoundError(sessionId)
      return repo.messages(sessionId)
    },
    transitions: (turnId) => repo.transitions(turnId),
    getTurn: (turnId) => repo.getTurn(turnId),
    subscribe: (listener) => bus.subscribe(listener),
    async close() {
      if (closed) return
      closed = true
      const turns = [...active.values()]
      for (const turn of turns) turn.abort('engine closed')
      await Promise.all(turns.map((turn) => turn.done.catch(() => undefined)))
      await opened.close()
    },
  }
  return engine
}
