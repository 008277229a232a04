/**
 * The engine's session calls: create, read, update, delete, revert and fork a session, its
 * messages and its usage. Store work only, no running turn; `createEngine` composes them.
 */
import { InvalidArgumentError, SessionNotFoundError } from '../core/errors'
import type { ResolvedConfig } from '../config/resolve-config'
import { deleteSession, fork, revert, sessionUsage, unrevert, updateSession, visibleMessages, type HistoryDeps } from '../conversation/history'
import type { Engine } from './create-engine'
import type { EngineCall } from './engine-calls'
import { newId } from '../core/ids'
import { requireId, sessionOptions } from '../core/arguments'
import { validateSessionDefaults } from '../conversation/call-settings'
import type { Store } from '../store/store'
import type { SessionInfo } from '../core/types'

export interface SessionCallDeps {
  config: ResolvedConfig
  store: Store
  history: HistoryDeps
  /** Throws `EngineClosedError` after close. */
  requireOpen(operation: string): void
  call: EngineCall
}

export type SessionCalls = Pick<
  Engine,
  'createSession' | 'updateSession' | 'deleteSession' | 'revert' | 'unrevert' | 'fork' | 'usage' | 'getSession' | 'listSessions' | 'messages'
>

/**
 * @example
 * const engine = { ...sessionCalls({ config, store, history, requireOpen, call }), ... }
 */
export function sessionCalls({ config, store, history, requireOpen, call }: SessionCallDeps): SessionCalls {
  return {
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
      await call('create a session', () => store.sessions.insert(session))
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
    usage: (sessionId) => call('read usage', () => sessionUsage(store, requireId('sessionId', sessionId))),
    getSession: async (sessionId) => call('get a session', () => store.sessions.get(requireId('sessionId', sessionId))),
    listSessions: () => call('list sessions', () => store.sessions.list()),
    messages: (sessionId) =>
      call('read messages', async () => {
        requireId('sessionId', sessionId)
        const session = await store.sessions.get(sessionId)
        if (!session) throw new SessionNotFoundError(sessionId)
        return visibleMessages(await store.messages.list(sessionId), session.revertedTo)
      }),
  }
}
