/**
 * The engine's session calls: create, read, update, delete, revert and fork a session, its
 * messages and its usage. Store work only, no running turn; `createEngine` composes them.
 */
import { InvalidArgumentError, SessionNotFoundError } from '../core/errors'
import type { ResolvedConfig } from '../config/resolved-config'
import { deleteSession, fork, forkTurn, revert, sessionUsage, unrevert, updateSession, visibleMessages, type HistoryDeps } from '../conversation/history'
import type { EngineCall } from './engine-calls'
import { newId } from '../core/ids'
import { jsonCopy } from '../core/json-copy'
import { validateSessionDefaults } from '../conversation/resolve-turn-options'
import type { Store } from '../store/store'
import type { MessageWithParts, SessionDefaults, SessionInfo, SessionMetadata, SessionUsage, Usage } from '../core/types'
import { sumUsage } from '../core/usage'
import { columnTextProblem, requireId, requireJsonObject, sessionOptions } from '../core/arguments'

/** A tenant's tokens and cost (`engine.tenantUsage`): its sessions' run trees summed. */
export interface TenantUsage extends Usage {
  tenant: string
  /** How many (top-level) sessions the tenant has. */
  sessions: number
}

/** A tenant name: 1-200 characters that both dialects store exactly. */
function requireTenant(value: unknown): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > 200) throw new InvalidArgumentError('tenant', value, 'a tenant name (a string of 1-200 characters)')
  const problem = columnTextProblem(value)
  if (problem) throw new InvalidArgumentError('tenant', value, `a tenant name that can be stored exactly; this one ${problem}`)
  return value
}

export interface SessionCallDeps {
  config: ResolvedConfig
  store: Store
  history: HistoryDeps
  /** Throws `EngineClosedError` after close. */
  requireOpen(operation: string): void
  call: EngineCall
}

export interface SessionCalls {
  /**
   * Creates a session (a conversation), with defaults for its turns: `system`, `model` and
   * `tools` (registered names) and call `settings`. Stored; a prompt's options win over them. `id` lets a caller choose it (e.g. a chat id from a web page).
   * `metadata`: the app's own JSON object (an owner id, say), stored and returned as given.
   */
  createSession(options?: { title?: string; id?: string; metadata?: SessionMetadata; tenant?: string } & SessionDefaults): Promise<SessionInfo>
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
  /**
   * A new session whose history is a stored turn up to and including step `step` (its prompt,
   * the steps' calls and tool results), recording `forkedFrom: { sessionId, turnId, step }`.
   * Prompt it to continue live with another model, system prompt or tools. Refused with
   * `SessionBusyError` while a turn runs on the turn's session.
   *
   * @example
   * const copy = await engine.forkTurn(turnId, { step: 2 })
   * await engine.prompt(copy.id, 'Go on.', { model: 'second' }).done
   */
  forkTurn(turnId: string, options: { step: number; title?: string | null }): Promise<SessionInfo>
  /** Tokens and cost of the session: total and per turn, compactions included. */
  usage(sessionId: string): Promise<SessionUsage>
  /**
   * Tokens and cost of a tenant (`createSession({ tenant })`): the sum over its sessions, each
   * with its run trees (`usage(id).tree`), and how many sessions it has. Zero for an unknown tenant.
   *
   * @example
   * const { tokens, cost, sessions } = await engine.tenantUsage('acme')
   */
  tenantUsage(tenant: string): Promise<TenantUsage>
  /** A session by id, or undefined when the database does not hold it (a lookup). */
  getSession(sessionId: string): Promise<SessionInfo | undefined>
  /** All sessions, oldest first; the child sessions of run trees (`parentSessionId` set) only with `{ children: true }`. */
  listSessions(options?: { children?: boolean }): Promise<SessionInfo[]>
  /** Messages with parts, in order, read from the database. Throws `SessionNotFoundError` for an unknown session. */
  messages(sessionId: string): Promise<MessageWithParts[]>
}

/**
 * @example
 * const engine = { ...sessionCalls({ config, store, history, requireOpen, call }), ... }
 */
export function sessionCalls({ config, store, history, requireOpen, call }: SessionCallDeps): SessionCalls {
  return {
    async createSession(options) {
      requireOpen('create a session')
      const { title, id, metadata, tenant, ...defaults } = sessionOptions(options)
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
        ...(metadata !== undefined ? { metadata: jsonCopy(requireJsonObject('options.metadata', metadata)) } : {}),
        ...(tenant !== undefined ? { tenant: requireTenant(tenant) } : {}),
      }
      // (tried again through an outage: a first insert whose commit was lost with its connection may have landed)
      let tried = false
      await call('create a session', async () => {
        if (tried && (await store.sessions.get(session.id))) return
        tried = true
        await store.sessions.insert(session)
      })
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
    forkTurn(turnId, forkOptions) {
      requireOpen('fork a turn')
      return forkTurn(history, turnId, forkOptions)
    },
    usage: (sessionId) => call('read usage', () => sessionUsage(store, requireId('sessionId', sessionId))),
    tenantUsage: (tenant) => {
      const name = requireTenant(tenant)
      return call("read a tenant's usage", async () => {
        const sessions = (await store.sessions.list()).filter((s) => s.tenant === name)
        const usages = await Promise.all(sessions.map((s) => sessionUsage(store, s.id)))
        return { tenant: name, sessions: sessions.length, ...sumUsage(usages.map((u) => u.tree)) }
      })
    },
    getSession: async (sessionId) => call('get a session', () => store.sessions.get(requireId('sessionId', sessionId))),
    listSessions: (options) => {
      if (options !== undefined && (typeof options !== 'object' || options === null || Object.keys(options).some((k) => k !== 'children'))) {
        throw new InvalidArgumentError('options', options, 'an object like { children: true }')
      }
      return call('list sessions', () => store.sessions.list(options?.children === true ? { children: true } : {}))
    },
    messages: (sessionId) =>
      call('read messages', async () => {
        requireId('sessionId', sessionId)
        const session = await store.sessions.get(sessionId)
        if (!session) throw new SessionNotFoundError(sessionId)
        return visibleMessages(await store.messages.list(sessionId), session.revertedTo)
      }),
  }
}
