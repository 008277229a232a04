/**
 * Turns (TurnStore): the row and its chart input, updates with and without a
 * fence, claims (compare-and-set on owner and epoch), leases, release, the open turns, and the
 * options and usage stored with a turn.
 *
 * The fencing rule: a fenced write succeeds only while the turn is unfinished and owned by
 * `fence.owner` at `fence.epoch`; otherwise it throws TurnOwnershipLostError and changes nothing.
 */
import { TurnOwnershipLostError } from '../../core/errors'
import type { TurnUsage } from '../../core/types'
import type { Store, TurnUpdate } from '../../store/store'
import { awkwardStrings, big, rejection, session, sessionWithTurn, turn } from './fixtures'
import { defineCases, type AddCase } from './cases'
import { expect } from './expect'

const update = (overrides: Partial<TurnUpdate> = {}): TurnUpdate => ({ state: 'streaming', step: 1, attempt: 1, retryAt: null, error: null, ...overrides })

/** A stored turn claimed by `owner` (epoch 0 → 1): a running turn and its fence. */
async function claimedTurn(store: Store, owner = 'host:1:a') {
  const { session: s, turn: t } = await sessionWithTurn(store)
  const fence = await store.turns.claim(t.id, { owner: null, epoch: 0 }, owner, big + 30_000)
  expect(fence).toEqual({ owner, epoch: 1 })
  return { session: s, turn: t, fence: fence! }
}

async function expectOwnershipLost(promise: Promise<unknown>, turnId: string, owner: string) {
  const error = await rejection(promise)
  expect(TurnOwnershipLostError.isInstance(error)).toBe(true)
  expect(error).toMatchObject({ turnId, owner })
}

export const turnsFencingLeasesClaimsCases = defineCases('turns, fencing, leases and claims', (it) => {
  turnRowCases(it)
  fencedUpdateCases(it)
  fenceAndClaimCases(it)
  racingClaimAndOpenCases(it)
  dueAndLeaseCases(it)
  nextDeadlineCases(it)
  releaseAndStoredCases(it)
})

function turnRowCases(it: AddCase): void {
  it('a turn comes back as inserted, epoch 0, with its chart input; an unknown turn is undefined', async (store) => {
    const s = session()
    await store.sessions.insert(s)
    const t = turn(s.id, { state: 'retry-waiting', step: 2, attempt: 3, retryAt: big + 1000, error: { name: 'APIError', message: awkwardStrings[8] }, owner: 'host:1:a', leaseUntil: big + 30_000 })
    const input = { turnId: t.id, prompt: awkwardStrings, nested: { a: [1, 2, { b: null }] }, big }
    await store.turns.insert(t, input)
    const read = await store.turns.get(t.id)
    expect(read).toEqual({ ...t, epoch: 0 })
    expect(read).not.toHaveProperty('options')
    expect(typeof read!.retryAt).toBe('number')
    expect(await store.turns.input(t.id)).toEqual(input)
    expect(await store.turns.get('trn_unknown')).toBeUndefined()
    expect(await store.turns.input('trn_unknown')).toBeUndefined()
  })

  it('a second turn with the same id is refused as a duplicate; a turn needs its session', async (store) => {
    const { session: s, turn: t } = await sessionWithTurn(store)
    expect((await rejection(store.turns.insert({ ...t, state: 'other' }, {}))).message).toMatch(/unique|duplicate/i)
    expect((await store.turns.get(t.id))!.state).toBe('idle')
    expect((await rejection(store.turns.insert(turn('ses_unknown'), {}))).message).toMatch(/foreign key/i)
    expect((await store.turns.usages(s.id)).map((u) => u.id)).toEqual([t.id])
  })

  it('an update without a fence writes state, step, attempt, retry time, error and updated time; the outcome only when given', async (store) => {
    const { turn: t } = await sessionWithTurn(store)
    await store.turns.update(t.id, update({ state: 'retry-waiting', step: 2, attempt: 3, retryAt: big + 1000, error: { name: 'APIError', message: 'x' } }), big + 50)
    expect(await store.turns.get(t.id)).toEqual({ ...t, epoch: 0, state: 'retry-waiting', step: 2, attempt: 3, retryAt: big + 1000, error: { name: 'APIError', message: 'x' }, time: { created: big, updated: big + 50 } })
    await store.turns.update(t.id, update({ state: 'failed', outcome: 'failed' }), big + 60)
    expect(await store.turns.get(t.id)).toMatchObject({ state: 'failed', outcome: 'failed', error: null, retryAt: null })
    // Without a fence a finished turn is written too (no owner to check).
    await store.turns.update(t.id, update({ state: 'failed', step: 9 }), big + 70)
    expect(await store.turns.get(t.id)).toMatchObject({ outcome: 'failed', step: 9 })
    await store.turns.update('trn_unknown', update(), big) // no row, nothing to do
    expect(await store.turns.get('trn_unknown')).toBeUndefined()
  })
}

function fencedUpdateCases(it: AddCase): void {
  it('a fenced update with the right owner and epoch writes the row, and ends the turn when it has an outcome', async (store) => {
    const { turn: t, fence } = await claimedTurn(store)
    await store.turns.update(t.id, update({ state: 'tool-running', step: 2 }), big + 10, fence)
    expect(await store.turns.get(t.id)).toMatchObject({ state: 'tool-running', step: 2, outcome: null, owner: fence.owner, epoch: 1, time: { updated: big + 10 } })
    await store.turns.update(t.id, update({ state: 'tool-running', step: 3, outcome: null }), big + 11, fence)
    expect(await store.turns.get(t.id)).toMatchObject({ step: 3, outcome: null })
    await store.turns.update(t.id, update({ state: 'completed', step: 3, outcome: 'completed' }), big + 20, fence)
    expect(await store.turns.get(t.id)).toMatchObject({ state: 'completed', outcome: 'completed', time: { updated: big + 20 } })
  })

  it('a fenced update with the wrong owner is refused and leaves the row as it was', async (store) => {
    const { turn: t, fence } = await claimedTurn(store, 'host:1:a')
    const before = await store.turns.get(t.id)
    await expectOwnershipLost(store.turns.update(t.id, update({ state: 'completed', outcome: 'completed' }), big + 10, { owner: 'host:2:b', epoch: fence.epoch }), t.id, 'host:2:b')
    expect(await store.turns.get(t.id)).toEqual(before)
  })

  it('a fenced update with the right owner and an old epoch is refused and leaves the row as it was', async (store) => {
    // The same engine claimed the turn again (its lease ran out, it recovered the turn): the
    // runner that still holds epoch 1 must not write over the one at epoch 2.
    const { turn: t, fence: old } = await claimedTurn(store, 'host:1:a')
    const current = await store.turns.claim(t.id, { owner: 'host:1:a', epoch: 1 }, 'host:1:a', big + 60_000)
    expect(current).toEqual({ owner: 'host:1:a', epoch: 2 })
    await store.turns.update(t.id, update({ state: 'streaming', step: 4 }), big + 5, current!)
    const before = await store.turns.get(t.id)
    await expectOwnershipLost(store.turns.update(t.id, update({ state: 'completed', step: 9, outcome: 'completed' }), big + 10, old), t.id, 'host:1:a')
    expect(await store.turns.get(t.id)).toEqual(before)
    await expectOwnershipLost(store.turns.checkFence(t.id, old), t.id, 'host:1:a')
    expect(await store.turns.get(t.id)).toEqual(before)
  })

  it('a finished turn refuses fenced writes, even with the owner and epoch that ended it', async (store) => {
    const { turn: t, fence } = await claimedTurn(store)
    await store.turns.update(t.id, update({ state: 'aborted', outcome: 'aborted' }), big + 10, fence)
    const ended = await store.turns.get(t.id)
    await expectOwnershipLost(store.turns.update(t.id, update({ state: 'streaming', step: 5 }), big + 20, fence), t.id, fence.owner)
    await expectOwnershipLost(store.turns.checkFence(t.id, fence), t.id, fence.owner)
    expect(await store.turns.get(t.id)).toEqual(ended)
  })

  it('an unknown turn refuses fenced writes', async (store) => {
    await expectOwnershipLost(store.turns.update('trn_unknown', update(), big, { owner: 'o', epoch: 0 }), 'trn_unknown', 'o')
    await expectOwnershipLost(store.turns.checkFence('trn_unknown', { owner: 'o', epoch: 0 }), 'trn_unknown', 'o')
  })
}

function fenceAndClaimCases(it: AddCase): void {
  it('checkFence passes with the right owner and epoch and changes nothing; a wrong owner or an unowned turn is refused', async (store) => {
    const { turn: t, fence } = await claimedTurn(store)
    const before = await store.turns.get(t.id)
    await expect(store.turns.checkFence(t.id, fence)).resolves.toBeUndefined()
    expect(await store.turns.get(t.id)).toEqual(before)
    await expectOwnershipLost(store.turns.checkFence(t.id, { owner: 'host:2:b', epoch: 1 }), t.id, 'host:2:b')
    await expectOwnershipLost(store.turns.checkFence(t.id, { owner: fence.owner, epoch: 0 }), t.id, fence.owner)
    await store.turns.release(fence.owner)
    await expectOwnershipLost(store.turns.checkFence(t.id, fence), t.id, fence.owner)
  })

  it("release with turn ids clears the owner's claim on those turns only", async (store) => {
    const a = await claimedTurn(store, 'host:1:a')
    const b = await claimedTurn(store, 'host:1:a')
    await store.turns.release('host:1:a', [a.turn.id])
    expect(await store.turns.get(a.turn.id)).toMatchObject({ owner: null, leaseUntil: null })
    expect(await store.turns.get(b.turn.id)).toMatchObject({ owner: 'host:1:a' })
    await store.turns.release('host:1:a', [])
    expect(await store.turns.get(b.turn.id)).toMatchObject({ owner: 'host:1:a' })
  })

  it('a claim is a compare-and-set on owner and epoch: it takes the turn and increments the epoch, or changes nothing', async (store) => {
    const { turn: t } = await sessionWithTurn(store)
    expect(await store.turns.claim(t.id, { owner: null, epoch: 1 }, 'b', big)).toBeNull() // wrong epoch
    expect(await store.turns.claim(t.id, { owner: 'someone', epoch: 0 }, 'b', big)).toBeNull() // wrong owner
    expect(await store.turns.get(t.id)).toMatchObject({ owner: null, leaseUntil: null, epoch: 0 })

    expect(await store.turns.claim(t.id, { owner: null, epoch: 0 }, 'a', big + 30_000)).toEqual({ owner: 'a', epoch: 1 })
    expect(await store.turns.get(t.id)).toMatchObject({ owner: 'a', leaseUntil: big + 30_000, epoch: 1 })
    expect(await store.turns.claim(t.id, { owner: null, epoch: 1 }, 'b', big)).toBeNull() // it is owned now
    expect(await store.turns.claim(t.id, { owner: 'a', epoch: 1 }, 'b', big + 60_000)).toEqual({ owner: 'b', epoch: 2 })
    expect(await store.turns.get(t.id)).toMatchObject({ owner: 'b', leaseUntil: big + 60_000, epoch: 2 })
    expect(await store.turns.claim('trn_unknown', { owner: null, epoch: 0 }, 'a', big)).toBeNull()
  })

  it('a finished turn cannot be claimed', async (store) => {
    const { turn: t } = await sessionWithTurn(store, { state: 'completed', outcome: 'completed' })
    expect(await store.turns.claim(t.id, { owner: null, epoch: 0 }, 'a', big)).toBeNull()
    expect(await store.turns.get(t.id)).toMatchObject({ owner: null, epoch: 0 })
  })
}

function racingClaimAndOpenCases(it: AddCase): void {
  it('two claims on the same expected epoch at once: exactly one wins, and the row is the winner\'s', async (store) => {
    const { turn: t } = await sessionWithTurn(store)
    const results = await Promise.all(['a', 'b', 'c'].map((owner) => store.turns.claim(t.id, { owner: null, epoch: 0 }, owner, big)))
    const winners = results.filter((r) => r !== null)
    expect(winners).toHaveLength(1)
    expect(winners[0]!.epoch).toBe(1)
    expect(await store.turns.get(t.id)).toMatchObject({ owner: winners[0]!.owner, epoch: 1 })
  })

  it('openOfSession returns the unfinished turn with its owner and lease; none when every turn ended', async (store) => {
    const { session: s } = await sessionWithTurn(store, { state: 'completed', outcome: 'completed' })
    expect(await store.turns.openOfSession(s.id)).toBeUndefined()
    const open = turn(s.id, { owner: 'host:1:a', leaseUntil: big + 30_000 })
    await store.turns.insert(open, {})
    expect(await store.turns.openOfSession(s.id)).toEqual({ id: open.id, owner: 'host:1:a', leaseUntil: big + 30_000 })
    expect(await store.turns.openOfSession('ses_unknown')).toBeUndefined()
  })

  it('open lists only unfinished turns of every session, oldest first, each with its chart input', async (store) => {
    const s1 = session()
    const s2 = session()
    await store.sessions.insert(s1)
    await store.sessions.insert(s2)
    const older = turn(s2.id, { state: 'streaming' })
    const finished = turn(s1.id, { state: 'completed', outcome: 'completed' })
    const newer = turn(s1.id, { state: 'awaiting-approval', owner: 'x', leaseUntil: big })
    await store.turns.insert(newer, { n: 'newer', text: awkwardStrings[0] })
    await store.turns.insert(finished, { n: 'finished' })
    await store.turns.insert(older, { n: 'older' })
    const open = await store.turns.open()
    expect(open).toEqual([
      { ...older, epoch: 0, input: { n: 'older' } },
      { ...newer, epoch: 0, input: { n: 'newer', text: awkwardStrings[0] } },
    ])
    await store.turns.update(older.id, update({ state: 'failed', outcome: 'failed' }), big)
    expect((await store.turns.open()).map((t) => t.id)).toEqual([newer.id])
  })
}

function nextDeadlineCases(it: AddCase): void {
  it('nextDeadline (a capability) is the earliest stored deadline after a time of the unfinished turns in the states asked; null when none', async (store) => {
    if (!store.turns.nextDeadline) return // a store without it: parked deadlines wait for the sweep
    const s1 = session()
    await store.sessions.insert(s1)
    const waits = ['awaiting-approval', 'sleeping']
    const retrying = turn(s1.id, { state: 'retry-waiting', retryAt: 1_500 })
    const past = turn(s1.id, { state: 'sleeping', retryAt: 900 })
    const next = turn(s1.id, { state: 'awaiting-approval', retryAt: big + 2_000 })
    const later = turn(s1.id, { state: 'sleeping', retryAt: big + 9_000 })
    const ended = turn(s1.id, { state: 'completed', outcome: 'completed', retryAt: 1_200 })
    for (const t of [later, ended, retrying, past, next]) await store.turns.insert(t, {})
    expect(await store.turns.nextDeadline(waits, 1_000)).toBe(big + 2_000)
    expect(await store.turns.nextDeadline(['retry-waiting'], 1_000)).toBe(1_500)
    expect(await store.turns.nextDeadline(waits, big + 9_000)).toBeNull()
    expect(await store.turns.nextDeadline([], 0)).toBeNull()
  })
}

function dueAndLeaseCases(it: AddCase): void {
  it('due lists the unfinished turns whose stored deadline has come, oldest first, and no turn without one or past its end', async (store) => {
    const s1 = session()
    await store.sessions.insert(s1)
    const late = turn(s1.id, { state: 'awaiting-approval', retryAt: 1_000 })
    const now = turn(s1.id, { state: 'awaiting-deferred', retryAt: 2_000 })
    const later = turn(s1.id, { state: 'awaiting-deferred', retryAt: 2_001 })
    const none = turn(s1.id, { state: 'awaiting-approval', retryAt: null })
    const ended = turn(s1.id, { state: 'completed', outcome: 'completed', retryAt: 500 })
    for (const t of [later, ended, none, now, late]) await store.turns.insert(t, { n: t.id })
    const due = await store.turns.due(2_000)
    expect(due.map((t) => t.id)).toEqual([late.id, now.id])
    expect(due[0]).toEqual({ ...late, epoch: 0 })
    expect(await store.turns.due(999)).toEqual([])
  })

  it("renewLeases extends the leases of the owner's unfinished turns still at their epochs and returns only those", async (store) => {
    const held = await claimedTurn(store, 'me')
    const taken = await claimedTurn(store, 'me')
    const reclaimed = await claimedTurn(store, 'me')
    const ended = await claimedTurn(store, 'me')
    await store.turns.claim(taken.turn.id, { owner: 'me', epoch: 1 }, 'other', big + 30_000)
    await store.turns.claim(reclaimed.turn.id, { owner: 'me', epoch: 1 }, 'me', big + 30_000) // epoch 2 now
    await store.turns.update(ended.turn.id, update({ state: 'completed', outcome: 'completed' }), big, ended.fence)
    const all = [held, taken, reclaimed, ended]
    const before = await Promise.all(all.map((t) => store.turns.get(t.turn.id)))

    const renewed = await store.turns.renewLeases(all.map((t) => ({ id: t.turn.id, epoch: 1 })), 'me', big + 90_000)

    expect([...renewed]).toEqual([held.turn.id])
    expect(await store.turns.get(held.turn.id)).toEqual({ ...before[0], leaseUntil: big + 90_000 })
    for (const [i, t] of all.entries()) if (i > 0) expect(await store.turns.get(t.turn.id)).toEqual(before[i])
    expect(await store.turns.renewLeases([], 'me', big)).toEqual(new Set())
  })
}

function releaseAndStoredCases(it: AddCase): void {
  it("release clears the owner's claim on its unfinished turns only; the epoch stays, so the next claim expects no owner at it", async (store) => {
    const mine = await claimedTurn(store, 'me')
    const theirs = await claimedTurn(store, 'them')
    const ended = await claimedTurn(store, 'me')
    await store.turns.update(ended.turn.id, update({ state: 'completed', outcome: 'completed' }), big, ended.fence)
    const before = { theirs: await store.turns.get(theirs.turn.id), ended: await store.turns.get(ended.turn.id) }

    await store.turns.release('me')

    expect(await store.turns.get(mine.turn.id)).toMatchObject({ owner: null, leaseUntil: null, epoch: 1 })
    expect(await store.turns.get(theirs.turn.id)).toEqual(before.theirs)
    expect(await store.turns.get(ended.turn.id)).toEqual(before.ended)
    expect(await store.turns.claim(mine.turn.id, { owner: null, epoch: 1 }, 'next', big)).toEqual({ owner: 'next', epoch: 2 })
  })

  it('options are null until set, then come back as set (also on the turn row); an unknown turn has none', async (store) => {
    const { turn: t } = await sessionWithTurn(store)
    expect(await store.turns.options(t.id)).toBeNull()
    const options = { model: 'fast', system: awkwardStrings.join('\n'), tools: ['read'], settings: { temperature: 0, stopSequences: ['"', '\\'], toolChoice: { type: 'tool' as const, toolName: 'read' } } }
    await store.turns.setOptions(t.id, options)
    expect(await store.turns.options(t.id)).toEqual(options)
    expect((await store.turns.get(t.id))!.options).toEqual(options)
    expect(await store.turns.options('trn_unknown')).toBeNull()
  })

  it("usages lists the session's turns oldest first, with the usage their final update wrote (fenced or not) or null", async (store) => {
    const { session: s, turn: first } = await sessionWithTurn(store)
    const second = turn(s.id)
    await store.turns.insert(second, {})
    const { turn: elsewhere } = await sessionWithTurn(store)
    const usage: TurnUsage = { turnId: first.id, tokens: { input: 3_000_000_000, output: 2, reasoning: 1, cache: { read: 0, write: 7 } }, cost: 0.125, compaction: { tokens: { input: 1, output: 1, reasoning: 0, cache: { read: 0, write: 0 } }, cost: 0.01 } }
    const end = { state: 'completed', outcome: 'completed', step: 2, attempt: 1, retryAt: null, error: null } as const
    const fence = await store.turns.claim(first.id, { owner: null, epoch: 0 }, 'host:1:a', big + 30_000)
    // A step's fenced update leaves the usage as it is; the final one writes it.
    await store.turns.update(first.id, { ...end, state: 'streaming', outcome: null }, big, fence!)
    expect((await store.turns.usages(s.id))[0]).toEqual({ id: first.id, usage: null })
    await store.turns.update(first.id, { ...end, usage }, big, fence!)
    await store.turns.update(elsewhere.id, { ...end, usage: { ...usage, turnId: elsewhere.id } }, big)
    expect(await store.turns.usages(s.id)).toEqual([
      { id: first.id, usage },
      { id: second.id, usage: null },
    ])
    expect(await store.turns.usages('ses_unknown')).toEqual([])
  })
}
