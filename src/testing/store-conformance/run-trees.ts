/**
 * Run trees: child sessions (hidden from `list` unless asked for, listed by
 * parent, deleted with their parent), child turns (their parent, call and root round-trip, one
 * child per parent call, direct children oldest first, descendants level by level), and the
 * pruning of a tree's logs only once its root has ended.
 */
import { big, rejection, session, transition, turn } from './fixtures'
import { defineCases, type AddCase } from './cases'
import type { Store } from '../../store/store'
import { expect } from './expect'

export const runTreesCases = defineCases('run trees', (it) => {
  childSessionCases(it)
  childTurnCases(it)
  descendantCases(it)
})

function childSessionCases(it: AddCase): void {
  it('a child session names its parent, is hidden from list unless asked for, and is listed by parent', async (store) => {
    const parent = session()
    await store.sessions.insert(parent)
    const child = session({ parentSessionId: parent.id })
    const grandchild = session({ parentSessionId: child.id })
    await store.sessions.insert(child)
    await store.sessions.insert(grandchild)
    expect(await store.sessions.get(child.id)).toEqual(child)
    expect((await store.sessions.list()).map((s) => s.id)).toEqual([parent.id])
    expect((await store.sessions.list({ children: true })).map((s) => s.id)).toEqual([parent.id, child.id, grandchild.id])
    expect(await store.sessions.children([parent.id])).toEqual([child])
    expect((await store.sessions.children([parent.id, child.id])).map((s) => s.id)).toEqual([child.id, grandchild.id])
    expect(await store.sessions.children([])).toEqual([])
  })

  it('deleting a session deletes its child sessions, theirs, and their turns and logs; a sibling stays', async (store) => {
    const parent = session()
    const other = session()
    await store.sessions.insert(parent)
    await store.sessions.insert(other)
    const root = turn(parent.id, { outcome: 'completed', state: 'completed' })
    await store.turns.insert(root, {})
    const child = await childSession(store, parent.id)
    const childTurn = turn(child.id, { parentTurnId: root.id, parentCallId: 'call_1', rootTurnId: root.id })
    await store.turns.insert(childTurn, {})
    await store.transitions.append(transition(childTurn.id, 1))
    const grandchild = await childSession(store, child.id)
    const otherChild = await childSession(store, other.id)
    expect(await store.sessions.delete(parent.id)).toBe(true)
    expect(await store.sessions.get(child.id)).toBeUndefined()
    expect(await store.sessions.get(grandchild.id)).toBeUndefined()
    expect(await store.turns.get(childTurn.id)).toBeUndefined()
    expect(await store.transitions.list(childTurn.id)).toEqual([])
    expect((await store.sessions.list({ children: true })).map((s) => s.id)).toEqual([other.id, otherChild.id])
  })
}

function childTurnCases(it: AddCase): void {
  it("a child turn's parent, call and root round-trip; children come oldest first; childOfCall finds a call's child", async (store) => {
    const { s, root } = await rootTurn(store)
    const a = session({ parentSessionId: s.id })
    const b = session({ parentSessionId: s.id })
    await store.sessions.insert(a)
    await store.sessions.insert(b)
    const first = turn(a.id, { parentTurnId: root.id, parentCallId: 'call_a', rootTurnId: root.id })
    const second = turn(b.id, { parentTurnId: root.id, parentCallId: 'call_b', rootTurnId: root.id })
    await store.turns.insert(second, {})
    await store.turns.insert(first, {})
    expect(await store.turns.get(first.id)).toMatchObject({ parentTurnId: root.id, parentCallId: 'call_a', rootTurnId: root.id })
    expect(await store.turns.get(root.id)).not.toHaveProperty('parentTurnId')
    expect((await store.turns.children(root.id)).map((t) => t.id)).toEqual([first.id, second.id])
    expect(await store.turns.children(first.id)).toEqual([])
    expect((await store.turns.childOfCall(root.id, 'call_b'))?.id).toBe(second.id)
    expect(await store.turns.childOfCall(root.id, 'call_c')).toBeUndefined()
  })

  it('a second child of the same parent call is refused as unique, and nothing of it is stored', async (store) => {
    const { s, root } = await rootTurn(store)
    const c1 = session({ parentSessionId: s.id })
    const c2 = session({ parentSessionId: s.id })
    await store.sessions.insert(c1)
    await store.sessions.insert(c2)
    await store.turns.insert(turn(c1.id, { parentTurnId: root.id, parentCallId: 'call_1', rootTurnId: root.id }), {})
    const again = turn(c2.id, { parentTurnId: root.id, parentCallId: 'call_1', rootTurnId: root.id })
    expect((await rejection(store.turns.insert(again, {}))).message).toMatch(/unique|duplicate/i)
    expect(await store.turns.get(again.id)).toBeUndefined()
    // Another call of the same parent is another child.
    await store.turns.insert(turn(c2.id, { parentTurnId: root.id, parentCallId: 'call_2', rootTurnId: root.id }), {})
    expect(await store.turns.children(root.id)).toHaveLength(2)
  })
}

function descendantCases(it: AddCase): void {
  it('descendants lists every level with its parent and usage, oldest first', async (store) => {
    const { s, root } = await rootTurn(store)
    const cs = await childSession(store, s.id)
    const child = turn(cs.id, { parentTurnId: root.id, parentCallId: 'c1', rootTurnId: root.id, step: 2 })
    await store.turns.insert(child, {})
    const gs = await childSession(store, cs.id)
    const grandchild = turn(gs.id, { parentTurnId: child.id, parentCallId: 'g1', rootTurnId: root.id })
    await store.turns.insert(grandchild, {})
    const usage = { turnId: grandchild.id, tokens: { input: 3, output: 4, reasoning: 0, cache: { read: 0, write: 0 } }, cost: 0.5, compaction: { tokens: { input: 0, output: 0, reasoning: 0, cache: { read: 0, write: 0 } }, cost: 0 } }
    await store.turns.update(grandchild.id, { state: 'completed', outcome: 'completed', step: 0, attempt: 1, retryAt: null, error: null, usage }, big)
    expect(await store.turns.descendants([root.id])).toEqual([
      { id: child.id, parentTurnId: root.id, sessionId: cs.id, step: 2, usage: null },
      { id: grandchild.id, parentTurnId: child.id, sessionId: gs.id, step: 0, usage },
    ])
    expect((await store.turns.descendants([child.id])).map((t) => t.id)).toEqual([grandchild.id])
    expect(await store.turns.descendants([])).toEqual([])
  })

  it("prune deletes a child turn's log only once its tree's root has ended before the cut", async (store) => {
    const { s, root } = await rootTurn(store)
    const cs = await childSession(store, s.id)
    const child = turn(cs.id, { parentTurnId: root.id, parentCallId: 'c1', rootTurnId: root.id })
    await store.turns.insert(child, {})
    await store.transitions.append(transition(root.id, 1))
    await store.transitions.append(transition(child.id, 1))
    const ended = { state: 'completed', outcome: 'completed' as const, step: 1, attempt: 1, retryAt: null, error: null }
    await store.turns.update(child.id, ended, big)
    // The child ended long ago, its root still runs: the child's log stays.
    expect(await store.transitions.deleteFinished(big + 10)).toBe(0)
    await store.turns.update(root.id, ended, big + 5)
    expect(await store.transitions.deleteFinished(big + 10)).toBe(2)
    expect(await store.transitions.list(child.id)).toEqual([])
  })
}

/** A session with a root turn in it: the top of a tree. */
async function rootTurn(store: Store) {
  const s = session()
  await store.sessions.insert(s)
  const root = turn(s.id)
  await store.turns.insert(root, {})
  return { s, root }
}

/** A child session of `parentSessionId`, stored. */
async function childSession(store: Store, parentSessionId: string) {
  const child = session({ parentSessionId })
  await store.sessions.insert(child)
  return child
}
