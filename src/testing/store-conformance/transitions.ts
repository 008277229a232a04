/**
 * The transition log (TransitionStore): rows read back in numeric seq order
 * with their payloads, one row per (turn, seq) as the SQL primary key has it, and the pruning
 * of finished turns' logs.
 */
import { awkwardStrings, big, rejection, sessionWithTurn, transition, turn } from './fixtures'
import { defineCases, type AddCase } from './cases'
import { expect } from './expect'

export const transitionsCases = defineCases('transitions', (it) => {
  logCases(it)
  storageWaitCases(it)
  integrityCases(it)
})

function logCases(it: AddCase): void {
  it('a log comes back in seq order (numeric, not text), every field round-tripped; parts only when there were some', async (store) => {
    const { turn: t } = await sessionWithTurn(store)
    const rows = Array.from({ length: 12 }, (_, i) =>
      transition(t.id, i + 1, { payload: { seq: i + 1, ok: true, text: awkwardStrings[i], nested: { list: [1, null, 'x'] } }, time: big + i, parts: i % 3 === 0 ? [`prt_${i}`, `prt_${i}b`] : [] }),
    )
    for (const i of [9, 0, 11, 1, 10, 2, 8, 3, 7, 4, 6, 5]) await store.transitions.append(rows[i])
    const log = await store.transitions.list(t.id)
    expect(log.map((r) => r.seq)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12])
    expect(log).toEqual(rows.map(({ parts, ...row }) => (parts!.length > 0 ? { ...row, parts } : row)))
    expect(log[1]).not.toHaveProperty('parts')
    expect(typeof log[0].time).toBe('number')
  })

  it('a payload round-trips as JSON does: a field set to undefined is dropped, a Date becomes its ISO string', async (store) => {
    const { turn: t } = await sessionWithTurn(store)
    const at = new Date(big)
    await store.transitions.append(transition(t.id, 1, { payload: { kept: 1, dropped: undefined, at, list: [1, 'two'] } }))
    const [read] = await store.transitions.list(t.id)
    expect(read.payload).toStrictEqual({ kept: 1, at: at.toISOString(), list: [1, 'two'] })
  })

  it("each turn has its own log (the same seq in two turns is two rows); an unknown turn's is empty", async (store) => {
    const { session: s, turn: a } = await sessionWithTurn(store)
    const b = turn(s.id)
    await store.turns.insert(b, {})
    await store.transitions.append(transition(a.id, 1, { to: 'a1' }))
    await store.transitions.append(transition(b.id, 1, { to: 'b1' }))
    expect((await store.transitions.list(a.id)).map((r) => r.to)).toEqual(['a1'])
    expect((await store.transitions.list(b.id)).map((r) => r.to)).toEqual(['b1'])
    expect(await store.transitions.list('trn_unknown')).toEqual([])
  })

  it('a second row with the same turn and seq is refused as a duplicate and the log stays as it was', async (store) => {
    const { turn: t } = await sessionWithTurn(store)
    await store.transitions.append(transition(t.id, 1))
    await store.transitions.append(transition(t.id, 2, { payload: { first: true } }))
    const before = await store.transitions.list(t.id)
    const error = await rejection(store.transitions.append(transition(t.id, 2, { payload: { second: true } })))
    expect(error.message).toMatch(/unique|duplicate/i)
    expect(await store.transitions.list(t.id)).toEqual(before)
  })
}

/** The outages a turn waited out, carried by the row written after them (`TransitionRecord.storageWaits`). */
function storageWaitCases(it: AddCase): void {
  it('the outages waited out before a row round-trip with it, in order; none: no field', async (store) => {
    const { turn: t } = await sessionWithTurn(store)
    const storageWaits = [
      { operation: 'writing parts', waitedMs: 1250 },
      { operation: `recording the transition to ${awkwardStrings[0]}`, waitedMs: big },
    ]
    await store.transitions.append(transition(t.id, 1, { storageWaits }))
    await store.transitions.append(transition(t.id, 2, { storageWaits: [] }))
    const [waited, plain] = await store.transitions.list(t.id)
    expect(waited.storageWaits).toEqual(storageWaits)
    expect(plain).not.toHaveProperty('storageWaits')
  })
}

function integrityCases(it: AddCase): void {
  it('a row needs its turn: refused otherwise', async (store) => {
    const error = await rejection(store.transitions.append(transition('trn_unknown', 1)))
    expect(error.message).toMatch(/foreign key/i)
    expect(await store.transitions.list('trn_unknown')).toEqual([])
  })

  it('deleteFinished deletes the logs of turns that ended before the time given, returns how many rows, and keeps every other log', async (store) => {
    const { session: s, turn: old } = await sessionWithTurn(store, { state: 'completed', outcome: 'completed', time: { created: big, updated: big + 10 } })
    const recent = turn(s.id, { state: 'failed', outcome: 'failed', time: { created: big, updated: big + 100 } })
    const atLimit = turn(s.id, { state: 'aborted', outcome: 'aborted', time: { created: big, updated: big + 50 } })
    const open = turn(s.id, { state: 'streaming', time: { created: big, updated: big } })
    for (const t of [recent, atLimit, open]) await store.turns.insert(t, {})
    for (const t of [old, recent, atLimit, open]) for (const seq of [1, 2, 3]) await store.transitions.append(transition(t.id, seq))

    expect(await store.transitions.deleteFinished(big + 50)).toBe(3)

    expect(await store.transitions.list(old.id)).toEqual([])
    for (const t of [recent, atLimit, open]) expect(await store.transitions.list(t.id)).toHaveLength(3)
    expect(await store.turns.get(old.id)).toMatchObject({ outcome: 'completed' }) // the turn stays
    expect(await store.transitions.deleteFinished(big + 50)).toBe(0)
  })
}
