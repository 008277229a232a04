/**
 * Stored schedules (the `schedules` capability): stored once by id, every field round-tripped,
 * listed oldest first, due and next among the ones not paused, an occurrence claimed by one of
 * two callers, deleted with their session. A store without the capability passes each case.
 */
import type { ScheduleRecord, Store } from '../../store/store'
import { defineCases, type AddCase } from './cases'
import { expect } from './expect'
import { awkwardStrings, big, newId, session } from './fixtures'

export const schedulesCases = defineCases('schedules', (it) => {
  storedCases(it)
  claimCases(it)
})

function schedule(sessionId: string, overrides: Partial<ScheduleRecord> = {}): ScheduleRecord {
  return {
    id: newId('sch'),
    sessionId,
    input: [{ type: 'text', text: awkwardStrings[0] }],
    options: { model: 'fast' },
    rule: { cron: '0 9 * * 1', timezone: 'Europe/Berlin' },
    catchUp: 'latest',
    next: big + 1_000,
    last: null,
    lastTurnId: null,
    missed: 0,
    paused: false,
    time: { created: big },
    ...overrides,
  }
}

function storedCases(it: AddCase): void {
  it('insert stores a schedule once by id, every field round-tripped; list is oldest first, of one session when asked', async (store: Store) => {
    const schedules = store.schedules
    if (!schedules) return
    const a = session()
    const b = session()
    for (const s of [a, b]) await store.sessions.insert(s)
    const first = schedule(a.id, { rule: { every: 500, from: big }, catchUp: 86_400_000, last: big, lastTurnId: newId('trn'), missed: 3 })
    const second = schedule(b.id, { time: { created: big + 1 }, rule: { at: big + 7 }, catchUp: 'none', next: null })
    const third = schedule(a.id, { time: { created: big + 2 }, paused: true })
    for (const s of [third, first, second]) expect(await schedules.insert(s)).toEqual(s)
    expect(await schedules.insert({ ...first, input: [{ type: 'text', text: 'again' }] })).toEqual(first)
    expect(await schedules.get(first.id)).toEqual(first)
    expect(await schedules.get('sch_unknown')).toBeUndefined()
    expect(await schedules.list()).toEqual([first, second, third])
    expect(await schedules.list(a.id)).toEqual([first, third])
  })

  it('due and nextDue read the schedules not paused; setPaused and delete change one; a deleted session takes its schedules', async (store: Store) => {
    const schedules = store.schedules
    if (!schedules) return
    const s = session()
    await store.sessions.insert(s)
    const soon = schedule(s.id, { next: big + 10 })
    const later = schedule(s.id, { next: big + 20 })
    const paused = schedule(s.id, { next: big, paused: true })
    const done = schedule(s.id, { next: null })
    for (const r of [soon, later, paused, done]) await schedules.insert(r)
    expect((await schedules.due(big + 20)).map((r) => r.id)).toEqual([soon.id, later.id])
    expect((await schedules.due(big + 15)).map((r) => r.id)).toEqual([soon.id])
    expect(await schedules.nextDue()).toBe(big + 10)
    expect(await schedules.setPaused(soon.id, true, big + 10)).toBe(true)
    expect(await schedules.setPaused(paused.id, false, big + 5)).toBe(true)
    expect(await schedules.nextDue()).toBe(big + 5)
    expect(await schedules.setPaused('sch_unknown', true, null)).toBe(false)
    expect(await schedules.delete(later.id)).toBe(true)
    expect(await schedules.delete(later.id)).toBe(false)
    expect((await schedules.list()).map((r) => r.id)).toEqual([soon.id, paused.id, done.id])
    await store.sessions.delete(s.id)
    expect(await schedules.list()).toEqual([])
    expect(await schedules.nextDue()).toBeUndefined()
  })
}

function claimCases(it: AddCase): void {
  it('claim moves a schedule on from its next occurrence, once: a second claim of that occurrence, or of a paused schedule, is refused', async (store: Store) => {
    const schedules = store.schedules
    if (!schedules) return
    const s = session()
    await store.sessions.insert(s)
    const r = schedule(s.id, { next: big })
    await schedules.insert(r)
    const turnId = newId('trn')
    const advance = { next: big + 500, last: big, lastTurnId: turnId, missed: 2 }
    const claims = await Promise.all([0, 1].map(() => store.transaction((tx) => tx.schedules!.claim(r.id, big, advance))))
    expect(claims.filter(Boolean).length).toBe(1)
    expect(await schedules.get(r.id)).toEqual({ ...r, ...advance })
    expect(await schedules.claim(r.id, big, advance)).toBe(false)
    await schedules.setPaused(r.id, true, big + 500)
    expect(await schedules.claim(r.id, big + 500, { ...advance, next: big + 1_000 })).toBe(false)
    expect(await schedules.claim('sch_unknown', big, advance)).toBe(false)
  })
}
