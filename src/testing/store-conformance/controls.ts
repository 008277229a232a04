/**
 * Control requests (ControlStore): pending requests of the given turns, oldest
 * first, until handled; how each was handled.
 */
import { awkwardStrings, big, control, newId, rejection, sessionWithTurn, turn } from './fixtures'
import { defineCases, type AddCase } from './cases'
import { expect } from './expect'

export const controlsCases = defineCases('controls', (it) => {
  pendingCases(it)
  firstMarkCases(it)
  duplicateCases(it)
})

function pendingCases(it: AddCase): void {
  it('pending lists the unhandled requests of the given turns, oldest first (id order), every field round-tripped', async (store) => {
    const { session: s, turn: a } = await sessionWithTurn(store)
    const b = turn(s.id)
    const c = turn(s.id)
    await store.turns.insert(b, {})
    await store.turns.insert(c, {})
    const ids = Array.from({ length: 4 }, () => newId('ctl'))
    const requests = [
      control(a.id, { id: ids[0], kind: 'approve', callId: 'call_1' }),
      control(b.id, { id: ids[1], kind: 'deny', callId: 'call_2', reason: awkwardStrings[6] }),
      control(a.id, { id: ids[2], kind: 'abort', callId: null, reason: awkwardStrings[0], createdAt: big + 5 }),
      control(c.id, { id: ids[3], input: { target: awkwardStrings[7], replicas: 2, nested: [null, true] } }),
    ]
    for (const i of [3, 2, 0, 1]) await store.controls.add(requests[i])
    expect(await store.controls.pending([a.id, b.id])).toEqual(requests.slice(0, 3))
    expect(await store.controls.pending([c.id])).toEqual([requests[3]])
    expect(await store.controls.pending([])).toEqual([])
    expect(await store.controls.pending(['trn_unknown'])).toEqual([])
  })

  it('a handled request is no longer pending, and its outcome says how it was handled', async (store) => {
    const { turn: t } = await sessionWithTurn(store)
    const applied = control(t.id)
    const refused = control(t.id, { kind: 'deny', callId: 'call_9' })
    const waiting = control(t.id, { kind: 'abort', callId: null })
    for (const r of [applied, refused, waiting]) await store.controls.add(r)
    expect(await store.controls.outcome(applied.id)).toEqual({ handled: false, result: null })

    await store.controls.handled(applied.id, null, big + 1)
    await store.controls.handled(refused.id, `the call is no longer pending: ${awkwardStrings[8]}`, big + 2)

    expect(await store.controls.pending([t.id])).toEqual([waiting])
    expect(await store.controls.outcome(applied.id)).toEqual({ handled: true, result: null })
    expect(await store.controls.outcome(refused.id)).toEqual({ handled: true, result: `the call is no longer pending: ${awkwardStrings[8]}` })
    expect(await store.controls.outcome(waiting.id)).toEqual({ handled: false, result: null })
    expect(await store.controls.outcome('ctl_unknown')).toBeUndefined()
    await store.controls.handled('ctl_unknown', null, big) // no row, nothing to do
    expect(await store.controls.outcome('ctl_unknown')).toBeUndefined()
  })
}

function firstMarkCases(it: AddCase): void {
  it('the first mark of a request stands: a second applier\'s refusal does not undo its application', async (store) => {
    const { turn: t } = await sessionWithTurn(store)
    const request = control(t.id)
    await store.controls.add(request)
    await store.controls.handled(request.id, null, big + 1)
    await store.controls.handled(request.id, 'the call is no longer pending', big + 2)
    expect(await store.controls.outcome(request.id)).toEqual({ handled: true, result: null })
  })
}

function duplicateCases(it: AddCase): void {
  it('a second request with the same id is refused as a duplicate; a request needs its turn', async (store) => {
    const { turn: t } = await sessionWithTurn(store)
    const r = control(t.id)
    await store.controls.add(r)
    expect((await rejection(store.controls.add({ ...r, kind: 'abort' }))).message).toMatch(/unique|duplicate/i)
    expect(await store.controls.pending([t.id])).toEqual([r])
    expect((await rejection(store.controls.add(control('trn_unknown')))).message).toMatch(/foreign key/i)
  })
}
