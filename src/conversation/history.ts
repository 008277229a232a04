/**
 * History operations on a session: rename, delete, revert (hide the messages after one until
 * the next prompt), unrevert, fork (a new session holding a copy of the history up to a
 * message), and usage totals. Each that changes the session refuses while a turn runs on it,
 * in this engine or another (the check and the change share one transaction holding the
 * session's write lock, as starting a turn does).
 */
import { InvalidArgumentError, MessageNotFoundError, SessionBusyError, SessionNotFoundError, TurnNotFoundError } from '../core/errors'
import { newId } from '../core/ids'
import type { Store } from '../store/store'
import { sumUsage, usageOfMessages, withDescendants } from '../core/usage'
import type { ForkOrigin, MessageInfo, MessageWithParts, Part, SessionInfo, SessionUsage, TurnUsage, Usage } from '../core/types'

export interface HistoryDeps {
  store: Store
  /** The id of the session's turn running in this engine, if any. */
  runningHere(sessionId: string): string | undefined
}

/** Runs `fn` holding the session's write lock, refusing when the session runs a turn. */
async function whileIdle<T>(deps: HistoryDeps, sessionId: string, fn: (tx: Store, now: number) => Promise<T>): Promise<T> {
  const here = deps.runningHere(sessionId)
  if (here) throw new SessionBusyError(sessionId, here)
  return deps.store.transaction(async (tx) => {
    const now = Date.now()
    if (!(await tx.sessions.lock(sessionId, now))) throw new SessionNotFoundError(sessionId)
    const open = await tx.turns.openOfSession(sessionId)
    if (open) throw new SessionBusyError(sessionId, open.id)
    return fn(tx, now)
  })
}

/** Messages shown: all of them, or those up to the revert marker. */
export function visibleMessages(messages: MessageWithParts[], revertedTo: string | undefined): MessageWithParts[] {
  return revertedTo ? messages.filter((m) => m.info.id <= revertedTo) : messages
}

/**
 * Sets a session's title.
 *
 * @example
 * await updateSession(deps, sessionId, { title: 'Trip to Lyon' })
 */
export async function updateSession(deps: HistoryDeps, sessionId: string, changes: { title?: string | null }): Promise<SessionInfo> {
  return whileIdle(deps, sessionId, async (tx, now) => {
    if (changes.title !== undefined) await tx.sessions.setTitle(sessionId, changes.title, now)
    return (await tx.sessions.get(sessionId))!
  })
}

/**
 * Deletes a session, its messages, parts, turns and transition logs.
 *
 * @example
 * await deleteSession(deps, sessionId)
 */
export async function deleteSession(deps: HistoryDeps, sessionId: string): Promise<void> {
  await whileIdle(deps, sessionId, async (tx) => {
    await tx.sessions.delete(sessionId)
  })
}

/**
 * Hides the messages after `messageId` from `messages()` and from the model. Restorable with
 * `unrevert` until the next prompt, which deletes them.
 *
 * @example
 * await revert(deps, sessionId, messages[1].info.id)
 */
export async function revert(deps: HistoryDeps, sessionId: string, messageId: string): Promise<SessionInfo> {
  return whileIdle(deps, sessionId, async (tx, now) => {
    const session = (await tx.sessions.get(sessionId))!
    if (!(await tx.messages.exists(sessionId, messageId)) || (session.revertedTo !== undefined && messageId > session.revertedTo)) throw new MessageNotFoundError(sessionId, messageId)
    await tx.sessions.setRevertedTo(sessionId, messageId, now)
    return (await tx.sessions.get(sessionId))!
  })
}

/**
 * Shows the messages a `revert` hid again (nothing to do when none are hidden).
 *
 * @example
 * await unrevert(deps, sessionId)
 */
export async function unrevert(deps: HistoryDeps, sessionId: string): Promise<SessionInfo> {
  return whileIdle(deps, sessionId, async (tx, now) => {
    await tx.sessions.setRevertedTo(sessionId, null, now)
    return (await tx.sessions.get(sessionId))!
  })
}

/**
 * A new session with a copy of the history up to and including `messageId` (new ids, same
 * order and contents) and the source session's defaults and metadata. Run trees: the child
 * sessions of the turns whose messages are copied are copied too (recursively), as children of
 * the copy.
 *
 * @example
 * const copy = await fork(deps, sessionId, messages[3].info.id)
 */
export async function fork(deps: HistoryDeps, sessionId: string, messageId: string, options: { title?: string | null } = {}): Promise<SessionInfo> {
  return whileIdle(deps, sessionId, async (tx, now) => {
    const source = (await tx.sessions.get(sessionId))!
    const messages = visibleMessages(await tx.messages.list(sessionId), source.revertedTo)
    const end = messages.findIndex((m) => m.info.id === messageId)
    if (end < 0) throw new MessageNotFoundError(sessionId, messageId)
    return copySession(tx, source, messages.slice(0, end + 1), now, options.title)
  })
}

/**
 * A new session whose history is a stored turn up to a step: the session's messages before the
 * turn, the turn's prompt, and the parts of its steps 1..`step` (every attempt, as stored: a
 * failed attempt's parts stay closed, as in the source). The new session records where it came
 * from (`forkedFrom`); prompting it continues from there, with any model, system or tools.
 * Refused while a turn runs on the source session.
 *
 * @example
 * const copy = await forkTurn(deps, turnId, { step: 2 })
 */
export async function forkTurn(deps: HistoryDeps, turnId: string, options: { step: number; title?: string | null }): Promise<SessionInfo> {
  const { step } = options
  if (!Number.isInteger(step) || step < 1) throw new InvalidArgumentError('step', step, 'a step number (1-based)')
  const turn = await deps.store.turns.get(turnId)
  if (!turn) throw new TurnNotFoundError(turnId)
  return whileIdle(deps, turn.sessionId, async (tx, now) => {
    const source = (await tx.sessions.get(turn.sessionId))!
    const messages = visibleMessages(await tx.messages.list(turn.sessionId), source.revertedTo)
    const first = messages.findIndex((m) => m.info.turnId === turnId)
    if (first < 0) throw new TurnNotFoundError(turnId)
    const own = messages.slice(first).filter((m) => m.info.turnId === turnId)
    const steps = Math.max(0, ...own.flatMap((m) => m.parts.map((p) => p.step ?? 0)))
    if (step > steps) throw new InvalidArgumentError('step', step, `a step of the turn (it has ${steps})`)
    // The prompt (user parts carry no step) and the answer's parts of the steps kept.
    const kept = own.map((m) => ({ ...m, parts: m.parts.filter((p) => p.step === undefined || p.step <= step) })).filter((m) => m.info.role === 'user' || m.parts.length > 0)
    return copySession(tx, source, [...messages.slice(0, first), ...kept], now, options.title, { sessionId: turn.sessionId, turnId, step })
  })
}

/**
 * A new session holding a copy of `messages` of `source` (new ids) and of the child sessions of
 * the calls among them; its title, defaults, metadata and tenant are the source's (the copy
 * belongs to whoever the source belongs to: an owner in the metadata, say).
 */
async function copySession(tx: Store, source: SessionInfo, messages: MessageWithParts[], now: number, title: string | null | undefined, forkedFrom?: ForkOrigin): Promise<SessionInfo> {
  const session: SessionInfo = {
    id: newId('ses', now),
    title: title !== undefined ? title : source.title,
    time: { created: now, updated: now },
    ...(source.defaults ? { defaults: source.defaults } : {}),
    ...(source.metadata ? { metadata: source.metadata } : {}),
    ...(source.tenant !== undefined ? { tenant: source.tenant } : {}),
    ...(forkedFrom ? { forkedFrom } : {}),
  }
  await tx.sessions.insert(session)
  await copyMessages(tx, messages, session.id, now)
  await copyChildSessions(tx, source.id, session.id, callsOf(messages), now)
  return session
}

/** Copies messages into `sessionId` with new ids (made in order, so the copy sorts as the original did). */
async function copyMessages(tx: Store, messages: MessageWithParts[], sessionId: string, now: number): Promise<void> {
  const parts: Part[] = []
  for (const message of messages) {
    const info = { ...message.info, id: newId('msg', now), sessionId }
    await tx.messages.upsert(info)
    for (const part of message.parts) parts.push({ ...part, id: newId('prt', now), sessionId, messageId: info.id })
  }
  for (let i = 0; i < parts.length; i += 200) await tx.messages.upsertParts(parts.slice(i, i + 200), now)
}

/** The tool calls among messages, as `<turn id> <call id>`: the child sessions they started go with them. */
const callsOf = (messages: MessageWithParts[]) => new Set(messages.flatMap((m) => m.parts.flatMap((p) => (p.type === 'tool' && m.info.turnId ? [`${m.info.turnId} ${p.callId}`] : []))))

/** The child sessions of `from` started by one of `calls`, copied (with theirs) as children of `to`. */
async function copyChildSessions(tx: Store, from: string, to: string, calls: Set<string>, now: number): Promise<void> {
  for (const child of await tx.sessions.children([from])) {
    const [first] = await tx.turns.usages(child.id)
    const started = first && (await tx.turns.get(first.id))
    if (!started?.parentTurnId || !calls.has(`${started.parentTurnId} ${started.parentCallId}`)) continue
    const copy: SessionInfo = { ...child, id: newId('ses', now), time: { created: now, updated: now }, parentSessionId: to }
    delete copy.revertedTo
    await tx.sessions.insert(copy)
    const messages = await tx.messages.list(child.id)
    await copyMessages(tx, messages, copy.id, now)
    await copyChildSessions(tx, child.id, copy.id, callsOf(messages), now)
  }
}

/**
 * Tokens and cost of the session: in total and per turn (steps and compactions; reverted turns
 * included: they were paid for). Run trees: `descendants` sums the child turns the session's
 * turns started (their children too), each turn's own `descendants` and `tree` say it per turn.
 *
 * @example
 * const { tokens, cost, turns, descendants, tree } = await sessionUsage(store, sessionId)
 */
export async function sessionUsage(store: Pick<Store, 'sessions' | 'turns' | 'messages'>, sessionId: string): Promise<SessionUsage> {
  if (!(await store.sessions.get(sessionId))) throw new SessionNotFoundError(sessionId)
  const turns = await store.turns.usages(sessionId)
  const tree = await store.turns.descendants(turns.map((t) => t.id))
  const usageOf = await turnUsages(store, [...turns, ...tree])
  const own = (t: { id: string }): TurnUsage => usageOf.get(t.id)!
  // Each descendant counted under the session's turn at the top of its branch.
  const parentOf = new Map(tree.map((t) => [t.id, t.parentTurnId]))
  const topOf = (id: string): string => {
    let at = id
    while (parentOf.has(at)) at = parentOf.get(at)!
    return at
  }
  const below = new Map<string, Usage[]>()
  for (const t of tree) below.set(topOf(t.id), [...(below.get(topOf(t.id)) ?? []), own(t)])
  const usages = turns.map((t) => withDescendants(own(t), below.get(t.id)))
  const ownTotal = sumUsage(usages)
  const descendants = sumUsage(tree.map(own))
  return { ...ownTotal, turns: usages, descendants, tree: sumUsage([ownTotal, descendants]) }
}

/**
 * The own usage of each turn (its steps and compactions, without its descendants'): the one
 * written on its row at its end, or, for a turn still running or ended by recovery, summed from
 * its messages (one read for all of them).
 *
 * @example
 * const byTurn = await turnUsages(store, await store.turns.usages(sessionId))
 */
export async function turnUsages(store: Pick<Store, 'messages'>, turns: Array<{ id: string; usage: TurnUsage | null }>): Promise<Map<string, TurnUsage>> {
  const missing = turns.filter((t) => !t.usage).map((t) => t.id)
  const byTurn = new Map<string, MessageInfo[]>()
  for (const info of missing.length ? await store.messages.assistantInfos(missing) : []) byTurn.set(info.turnId!, [...(byTurn.get(info.turnId!) ?? []), info])
  return new Map(turns.map((t) => [t.id, ownUsage(t.usage ?? usageOfMessages(t.id, byTurn.get(t.id) ?? []))]))
}

/** A turn's own usage (a stored row written with its descendants' sums read as its own). */
function ownUsage(usage: TurnUsage): TurnUsage {
  const { descendants: _descendants, tree: _tree, ...own } = usage
  return own
}
