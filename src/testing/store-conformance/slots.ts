/**
 * The running turns `concurrency` limits (the `slots` capability): unfinished turns of top-level
 * sessions, in all and by tenant, without finished, parked (owned by `parkedOwner`) and child
 * turns, and without the turn being started. A store without the capability passes each case.
 */
import { parkedOwner } from '../../core/parking'
import { session, turn } from './fixtures'
import { defineCases } from './cases'
import type { Store } from '../../store/store'
import { expect } from './expect'

export const slotsCases = defineCases('slots', (it) => {
  it('running turns are counted in all and by tenant: not finished, parked, child or excepted ones', async (store: Store) => {
    const slots = store.slots
    if (!slots) return
    const acme = session({ tenant: 'acme' })
    const globex = session({ tenant: 'globex' })
    const none = session()
    for (const s of [acme, globex, none]) await store.sessions.insert(s)
    const child = session({ parentSessionId: acme.id, tenant: 'acme' })
    await store.sessions.insert(child)
    const running = turn(acme.id)
    const starting = turn(acme.id)
    const parked = turn(acme.id)
    const root = turn(globex.id)
    for (const t of [running, starting, parked, root, turn(none.id), turn(acme.id, { state: 'completed', outcome: 'completed' }), turn(child.id, { parentTurnId: root.id, parentCallId: 'call_1', rootTurnId: root.id })]) {
      await store.turns.insert(t, {})
    }
    expect(await store.turns.claim(parked.id, { owner: null, epoch: 0 }, parkedOwner, 0)).toEqual({ owner: parkedOwner, epoch: 1 })
    expect(await store.transaction((tx) => tx.slots!.running('acme', starting.id))).toEqual({ total: 3, tenant: 1 })
    expect(await store.transaction((tx) => tx.slots!.running(null, 'trn_none'))).toEqual({ total: 4, tenant: 0 })
    expect(Object.fromEntries(await slots.byTenant())).toEqual({ acme: 2, globex: 1, '': 1 })
  })

  it('the tenant served last is the one of the last start that committed', async (store: Store) => {
    const slots = store.slots
    if (!slots) return
    expect(await slots.servedLast()).toBeUndefined()
    await store.transaction((tx) => tx.slots!.running('acme', 'trn_a'))
    expect(await slots.servedLast()).toBe('acme')
    // A refused start (its transaction throws) serves no one.
    await expect(
      store.transaction(async (tx) => {
        await tx.slots!.running('globex', 'trn_b')
        throw new Error('over the limit')
      }),
    ).rejects.toThrow('over the limit')
    expect(await slots.servedLast()).toBe('acme')
    await store.transaction((tx) => tx.slots!.running(null, 'trn_c'))
    expect(await slots.servedLast()).toBe('')
  })
})
