/**
 * Transactions (`Store.transaction`): writes commit together or not at all, a
 * nested call joins, a refused write (a duplicate seq, a lost fence) fails the whole
 * transaction, and nothing uncommitted is ever read from outside.
 *
 * Where the stores differ by design: memory and SQLite (one connection) run calls and
 * transactions one at a time, so a call made during a transaction waits for its end;
 * PostgreSQL runs them at once, each reading what was committed before it.
 */
import { TurnOwnershipLostError } from '../../core/errors'
import type { Store } from '../../store/store'
import { big, control, deferred, message, queued, rejection, session, sessionWithTurn, settlesWithin, textPart, transition, turn } from './fixtures'
import { defineCases, type AddCase, type StoreTraits } from './cases'
import { expect } from './expect'

/** Everything the store holds for these sessions and turns: compared before and after a rolled-back transaction. */
async function snapshot(store: Store, sessionIds: string[], turnIds: string[]) {
  return {
    sessions: await store.sessions.list(),
    messages: await Promise.all(sessionIds.map((id) => store.messages.list(id))),
    turns: await Promise.all(turnIds.map((id) => store.turns.get(id))),
    open: await store.turns.open(),
    logs: await Promise.all(turnIds.map((id) => store.transitions.list(id))),
    queues: await Promise.all(sessionIds.map((id) => store.queue.list(id))),
    controls: await store.controls.pending(turnIds),
    options: await Promise.all(turnIds.map((id) => store.turns.options(id))),
    usages: await Promise.all(sessionIds.map((id) => store.turns.usages(id))),
  }
}

export const transactionsCases = defineCases('transactions', (it, traits) => {
  commitCases(it, traits)
  rollbackCases(it, traits)
  nestingCases(it, traits)
  fenceCases(it, traits)
  isolationCases(it, traits)
  orderingCases(it, traits)
})

function commitCases(it: AddCase, traits: StoreTraits): void {
  it("a transaction's writes are read after it commits, and it resolves with what its function returned", async (store) => {
    const s = session()
    const m = message(s.id)
    const part = textPart(m)
    const result = await store.transaction(async (tx) => {
      await tx.sessions.insert(s)
      await tx.messages.upsert(m)
      await tx.messages.upsertParts([part], big)
      // The transaction reads its own writes.
      expect(await tx.messages.list(s.id)).toEqual([{ info: m, parts: [part] }])
      return 'done'
    })
    expect(result).toBe('done')
    expect(await store.sessions.get(s.id)).toEqual(s)
    expect(await store.messages.list(s.id)).toEqual([{ info: m, parts: [part] }])
  })
}

function rollbackCases(it: AddCase, traits: StoreTraits): void {
  it('a throw rolls back every write of the transaction, in every aggregate, and rejects with what was thrown', async (store) => {
    const { session: s, turn: t } = await sessionWithTurn(store)
    const fence = (await store.turns.claim(t.id, { owner: null, epoch: 0 }, 'me', big))!
    const m = message(s.id, { role: 'assistant', turnId: t.id })
    await store.messages.upsert(m)
    const part = textPart(m, 'before')
    await store.messages.upsertParts([part], big)
    await store.transitions.append(transition(t.id, 1))
    const q = queued(s.id)
    await store.queue.insert(q)
    const doomed = session() // deleted in the transaction, with its rows
    await store.sessions.insert(doomed)
    const before = await snapshot(store, [s.id, doomed.id], [t.id])

    const thrown = new Error('the function failed')
    const error = await rejection(
      store.transaction(async (tx) => {
        const added = session()
        await tx.sessions.insert(added)
        await tx.sessions.setTitle(s.id, 'changed', big + 1)
        await tx.messages.upsert({ ...m, finish: 'stop' })
        await tx.messages.upsertParts([{ ...part, text: 'after' }, textPart(m, 'new')], big + 1)
        await tx.messages.upsert(message(added.id))
        const t2 = turn(s.id)
        await tx.turns.insert(t2, {})
        const usage = { turnId: t.id, tokens: { input: 1, output: 1, reasoning: 0, cache: { read: 0, write: 0 } }, cost: 1, compaction: { tokens: { input: 0, output: 0, reasoning: 0, cache: { read: 0, write: 0 } }, cost: 0 } }
        await tx.turns.update(t.id, { state: 'completed', outcome: 'completed', step: 2, attempt: 1, retryAt: null, error: null, usage }, big + 1, fence)
        await tx.turns.setOptions(t.id, { model: 'm', settings: {} })
        await tx.transitions.append(transition(t.id, 2))
        await tx.controls.add(control(t.id))
        expect(await tx.queue.take(q.id)).toBe(true)
        await tx.queue.insert(queued(s.id))
        expect(await tx.sessions.delete(doomed.id)).toBe(true)
        throw thrown
      }),
    )

    expect(error).toBe(thrown)
    expect(await snapshot(store, [s.id, doomed.id], [t.id])).toEqual(before)
    expect(await store.sessions.list()).toHaveLength(2)
  })
}

function nestingCases(it: AddCase, traits: StoreTraits): void {
  it('a nested transaction joins the outer one: its writes commit with it, and roll back with it', async (store) => {
    const committed = session()
    await store.transaction(async (tx) => {
      await tx.sessions.insert(committed)
      await tx.transaction(async (inner) => {
        await inner.sessions.setTitle(committed.id, 'from the inner one', big + 1)
        // The inner transaction sees the outer one's writes: it is the same transaction.
        expect(await inner.sessions.get(committed.id)).toMatchObject({ title: 'from the inner one' })
      })
    })
    expect(await store.sessions.get(committed.id)).toMatchObject({ title: 'from the inner one' })

    const rolledBack = session()
    await rejection(
      store.transaction(async (tx) => {
        await tx.transaction(async (inner) => inner.sessions.insert(rolledBack))
        throw new Error('the outer one fails after the inner one returned')
      }),
    )
    expect(await store.sessions.get(rolledBack.id)).toBeUndefined()
    expect(await store.sessions.list()).toEqual([{ ...committed, title: 'from the inner one', time: { created: big, updated: big + 1 } }])
  })

  it('a duplicate seq fails the transaction: the error says so and the log, and the rest of the transaction, stay as they were', async (store) => {
    const { turn: t } = await sessionWithTurn(store)
    for (const seq of [1, 2, 3]) await store.transitions.append(transition(t.id, seq))
    const before = { log: await store.transitions.list(t.id), turn: await store.turns.get(t.id) }
    const error = await rejection(
      store.transaction(async (tx) => {
        await tx.turns.update(t.id, { state: 'streaming', step: 4, attempt: 1, retryAt: null, error: null }, big + 4)
        await tx.transitions.append(transition(t.id, 4))
        await tx.transitions.append(transition(t.id, 4, { to: 'again' }))
      }),
    )
    expect(error.message).toMatch(/unique|duplicate/i)
    expect(await store.transitions.list(t.id)).toEqual(before.log)
    expect(await store.turns.get(t.id)).toEqual(before.turn)
    // The store goes on: the next transaction writes seq 4.
    await store.transaction((tx) => tx.transitions.append(transition(t.id, 4)))
    expect((await store.transitions.list(t.id)).map((r) => r.seq)).toEqual([1, 2, 3, 4])
  })
}

function fenceCases(it: AddCase, traits: StoreTraits): void {
  it('a fence that no longer holds fails the transaction that checks it, with nothing of it written', async (store) => {
    const { session: s, turn: t } = await sessionWithTurn(store)
    const stale = (await store.turns.claim(t.id, { owner: null, epoch: 0 }, 'me', big))!
    await store.turns.claim(t.id, { owner: 'me', epoch: 1 }, 'other', big) // taken over
    const m = message(s.id, { role: 'assistant', turnId: t.id })
    const error = await rejection(
      store.transaction(async (tx) => {
        await tx.messages.upsert(m)
        await tx.messages.upsertParts([textPart(m, 'written by the engine that lost the turn')], big)
        await tx.turns.checkFence(t.id, stale)
      }),
    )
    expect(TurnOwnershipLostError.isInstance(error)).toBe(true)
    expect(await store.messages.list(s.id)).toEqual([])
  })

  it('transactions asked for together each commit or roll back on their own', async (store) => {
    const { turn: t } = await sessionWithTurn(store)
    const results = await Promise.allSettled(
      Array.from({ length: 8 }, (_, i) =>
        store.transaction(async (tx) => {
          await tx.transitions.append(transition(t.id, i + 1))
          if (i % 3 === 1) throw new Error(`work ${i} fails`)
          return i
        }),
      ),
    )
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'fulfilled', 'rejected', 'fulfilled', 'fulfilled', 'rejected'])
    expect((await store.transitions.list(t.id)).map((r) => r.seq)).toEqual([1, 3, 4, 6, 7])
  })
}

function isolationCases(it: AddCase, traits: StoreTraits): void {
  it('a read made while a transaction runs never sees its writes, which it then rolls back', async (store) => {
    const s = session()
    const inside = deferred()
    const gate = deferred()
    const transaction = store.transaction(async (tx) => {
      await tx.sessions.insert(s)
      inside.resolve()
      await gate.promise
      throw new Error('rolled back')
    })
    await inside.promise
    const read = store.sessions.get(s.id)
    if (traits.serialises) {
      // One connection: the read waits for the transaction to end.
      expect(await settlesWithin(read)).toBe(false)
    } else {
      // PostgreSQL: the read runs at once, on what was committed.
      expect(await read).toBeUndefined()
    }
    gate.resolve()
    await expect(transaction).rejects.toThrow('rolled back')
    expect(await read).toBeUndefined()
  })

  it('a read made while a transaction runs reads its writes only once it committed (one connection), or what was committed before it (PostgreSQL)', async (store) => {
    const s = session()
    await store.sessions.insert(s)
    const inside = deferred()
    const gate = deferred()
    const transaction = store.transaction(async (tx) => {
      await tx.sessions.setTitle(s.id, 'committed', big + 1)
      inside.resolve()
      await gate.promise
    })
    await inside.promise
    const read = store.sessions.get(s.id)
    if (traits.serialises) expect(await settlesWithin(read)).toBe(false)
    else expect((await read)!.title).toBeNull()
    gate.resolve()
    await transaction
    expect((await read)!.title).toBe(traits.serialises ? 'committed' : null)
    expect((await store.sessions.get(s.id))!.title).toBe('committed')
  })
}

function orderingCases(it: AddCase, traits: StoreTraits): void {
  it('a transaction asked for while another runs starts after it ends (one connection), or at once (PostgreSQL)', async (store) => {
    const events: string[] = []
    const gate = deferred()
    const inside = deferred()
    const secondInside = deferred()
    const first = store.transaction(async (tx) => {
      events.push('first begins')
      await tx.sessions.insert(session())
      inside.resolve()
      await gate.promise
      events.push('first ends')
    })
    await inside.promise
    const second = store.transaction(async (tx) => {
      events.push('second begins')
      secondInside.resolve()
      await tx.sessions.insert(session())
    })
    if (traits.serialises) {
      expect(await settlesWithin(second)).toBe(false)
      expect(events).toEqual(['first begins'])
    } else {
      // On its own connection the second one begins and commits while the first still waits.
      await secondInside.promise
      await second
      expect(events).toEqual(['first begins', 'second begins'])
    }
    gate.resolve()
    await Promise.all([first, second])
    expect(events).toEqual(traits.serialises ? ['first begins', 'first ends', 'second begins'] : ['first begins', 'second begins', 'first ends'])
    expect(await store.sessions.list()).toHaveLength(2)
  })
}
