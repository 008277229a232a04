/**
 * Sessions (SessionStore): what a caller reads after each write, the order of
 * `list`, the refusal of a second session with the same id, and the cascade of a delete.
 */
import { awkwardStrings, big, control, message, queued, rejection, session, sessionWithTurn, textPart, transition, turn } from './fixtures'
import { defineCases, type AddCase } from './cases'
import { expect } from './expect'

export const sessionsCases = defineCases('sessions', (it) => {
  roundTripCases(it)
  metadataCases(it)
  lockCases(it)
  deleteCases(it)
})

function roundTripCases(it: AddCase): void {
  it('a session comes back as inserted: title, big millisecond times and defaults (JSON) round-trip', async (store) => {
    const s = session({
      title: awkwardStrings[0],
      time: { created: big, updated: big + 1 },
      defaults: { system: awkwardStrings.join(' | '), model: 'fast', tools: ['read', 'write'], settings: { temperature: 0.5, stopSequences: ['\n\n', '👋'], providerOptions: { openai: { reasoningEffort: 'low' } } } },
    })
    await store.sessions.insert(s)
    const read = await store.sessions.get(s.id)
    expect(read).toEqual(s)
    expect(typeof read!.time.created).toBe('number')
    expect(await store.sessions.get('ses_unknown')).toBeUndefined()
  })

  it("a session's tenant comes back from get and list, and survives setTitle; a session without one has no tenant key", async (store) => {
    const s = session({ tenant: awkwardStrings[0] })
    const plain = session()
    await store.sessions.insert(s)
    await store.sessions.insert(plain)
    await store.sessions.setTitle(s.id, 'renamed', big + 5)
    expect(await store.sessions.get(s.id)).toMatchObject({ tenant: awkwardStrings[0], title: 'renamed' })
    expect((await store.sessions.list()).map((x) => x.tenant)).toEqual([awkwardStrings[0], undefined])
    expect(await store.sessions.get(plain.id)).not.toHaveProperty('tenant')
  })

  it("a fork's origin (forkedFrom) comes back from get and list; a session without one has no forkedFrom key", async (store) => {
    const origin = { sessionId: 'ses_source', turnId: 'trn_source', step: 2 }
    const s = session({ forkedFrom: origin })
    const plain = session()
    await store.sessions.insert(s)
    await store.sessions.insert(plain)
    expect((await store.sessions.get(s.id))?.forkedFrom).toEqual(origin)
    expect((await store.sessions.list()).map((x) => x.forkedFrom)).toEqual([origin, undefined])
    expect(await store.sessions.get(plain.id)).not.toHaveProperty('forkedFrom')
  })

  it('a session without defaults or title has no defaults key and a null title', async (store) => {
    const s = session()
    await store.sessions.insert(s)
    const read = await store.sessions.get(s.id)
    expect(read).toEqual({ id: s.id, title: null, time: { created: big, updated: big } })
    expect(read).not.toHaveProperty('defaults')
    expect(read).not.toHaveProperty('revertedTo')
  })
}

function metadataCases(it: AddCase): void {
  it("a session's metadata (the app's JSON object) comes back as inserted, from get and list, and survives lock, setTitle and setRevertedTo", async (store) => {
    const metadata = {
      owner: 'user_42',
      roles: ['admin', awkwardStrings[6]],
      nested: { quota: 1.5, active: true, none: null, text: awkwardStrings.join(' | ') },
      [awkwardStrings[0]]: awkwardStrings[10],
    }
    const s = session({ metadata })
    const plain = session()
    await store.sessions.insert(s)
    await store.sessions.insert(plain)
    expect(await store.sessions.get(s.id)).toEqual(s)
    expect((await store.sessions.list()).find((x) => x.id === s.id)).toEqual(s)
    expect(await store.sessions.get(plain.id)).not.toHaveProperty('metadata')
    await store.sessions.lock(s.id, big + 1)
    await store.sessions.setTitle(s.id, 'renamed', big + 2)
    await store.sessions.setRevertedTo(s.id, 'msg_01', big + 3)
    expect((await store.sessions.get(s.id))!.metadata).toEqual(metadata)
    // A copy: changing what was inserted, or what was read, changes nothing stored.
    metadata.roles.push('intruder')
    const read = (await store.sessions.get(s.id))!
    ;(read.metadata!.nested as Record<string, unknown>).quota = 99
    expect((await store.sessions.get(s.id))!.metadata).toEqual({ ...metadata, roles: ['admin', awkwardStrings[6]] })
  })

  it('list returns every session oldest first, by creation time and then id', async (store) => {
    expect(await store.sessions.list()).toEqual([])
    const a = session({ time: { created: big + 10, updated: big } })
    const b = session({ time: { created: big, updated: big + 99 } })
    const c = session({ time: { created: big + 10, updated: big } }) // same time as a, later id
    const d = session({ time: { created: big - 5, updated: big } })
    for (const s of [c, a, d, b]) await store.sessions.insert(s)
    expect((await store.sessions.list()).map((s) => s.id)).toEqual([d.id, b.id, a.id, c.id])
  })

  it('a second session with the same id is refused as a duplicate and the first stays as it was', async (store) => {
    const s = session({ title: 'first' })
    await store.sessions.insert(s)
    const error = await rejection(store.sessions.insert({ ...s, title: 'second' }))
    expect(error.message).toMatch(/unique|duplicate/i)
    expect(await store.sessions.get(s.id)).toEqual(s)
    expect(await store.sessions.list()).toHaveLength(1)
  })
}

function lockCases(it: AddCase): void {
  it('lock touches the session (its updated time) and says whether it exists', async (store) => {
    const s = session()
    await store.sessions.insert(s)
    expect(await store.sessions.lock(s.id, big + 5)).toBe(true)
    expect(await store.sessions.get(s.id)).toEqual({ ...s, time: { created: big, updated: big + 5 } })
    expect(await store.sessions.lock('ses_unknown', big)).toBe(false)
    expect(await store.sessions.get('ses_unknown')).toBeUndefined()
  })

  it('setTitle sets and clears the title, touching the session; false for an unknown session', async (store) => {
    const s = session()
    await store.sessions.insert(s)
    expect(await store.sessions.setTitle(s.id, awkwardStrings[6], big + 1)).toBe(true)
    expect(await store.sessions.get(s.id)).toEqual({ ...s, title: awkwardStrings[6], time: { created: big, updated: big + 1 } })
    expect(await store.sessions.setTitle(s.id, null, big + 2)).toBe(true)
    expect(await store.sessions.get(s.id)).toEqual({ ...s, title: null, time: { created: big, updated: big + 2 } })
    expect(await store.sessions.setTitle('ses_unknown', 'x', big)).toBe(false)
    expect(await store.sessions.list()).toHaveLength(1)
  })

  it('setRevertedTo sets and clears the revert marker, touching the session; an unknown session stays unknown', async (store) => {
    const s = session()
    await store.sessions.insert(s)
    await store.sessions.setRevertedTo(s.id, 'msg_01', big + 1)
    expect(await store.sessions.get(s.id)).toEqual({ ...s, revertedTo: 'msg_01', time: { created: big, updated: big + 1 } })
    await store.sessions.setRevertedTo(s.id, null, big + 2)
    const cleared = await store.sessions.get(s.id)
    expect(cleared).toEqual({ ...s, time: { created: big, updated: big + 2 } })
    expect(cleared).not.toHaveProperty('revertedTo')
    await store.sessions.setRevertedTo('ses_unknown', 'msg_01', big)
    expect(await store.sessions.get('ses_unknown')).toBeUndefined()
  })
}

function deleteCases(it: AddCase): void {
  it("delete removes the session with its messages, parts, turns, transition logs, controls and queued prompts, and nothing of another session's", async (store) => {
    const seed = async () => {
      const { session: s, turn: done } = await sessionWithTurn(store, { outcome: 'completed', state: 'completed' })
      const open = turn(s.id)
      await store.turns.insert(open, { prompt: 'open' })
      const m = message(s.id, { role: 'assistant', turnId: open.id })
      await store.messages.upsert(m)
      await store.messages.upsertParts([textPart(m)], big)
      await store.transitions.append(transition(done.id, 1))
      await store.transitions.append(transition(open.id, 1))
      const c = control(open.id)
      await store.controls.add(c)
      const q = queued(s.id)
      await store.queue.insert(q)
      return { session: s, turns: [done, open], control: c, queued: q }
    }
    const doomed = await seed()
    const kept = await seed()
    const keptBefore = {
      session: await store.sessions.get(kept.session.id),
      messages: await store.messages.list(kept.session.id),
      logs: await Promise.all(kept.turns.map((t) => store.transitions.list(t.id))),
    }

    expect(await store.sessions.delete(doomed.session.id)).toBe(true)

    expect(await store.sessions.get(doomed.session.id)).toBeUndefined()
    expect(await store.messages.list(doomed.session.id)).toEqual([])
    for (const t of doomed.turns) {
      expect(await store.turns.get(t.id)).toBeUndefined()
      expect(await store.transitions.list(t.id)).toEqual([])
    }
    expect(await store.turns.usages(doomed.session.id)).toEqual([])
    expect(await store.turns.openOfSession(doomed.session.id)).toBeUndefined()
    expect(await store.controls.outcome(doomed.control.id)).toBeUndefined()
    expect(await store.queue.get(doomed.queued.id)).toBeUndefined()
    expect((await store.turns.open()).map((t) => t.id)).toEqual([kept.turns[1].id])
    expect(await store.queue.idleSessions()).toEqual([])

    expect(await store.sessions.list()).toEqual([keptBefore.session])
    expect(await store.messages.list(kept.session.id)).toEqual(keptBefore.messages)
    expect(await Promise.all(kept.turns.map((t) => store.transitions.list(t.id)))).toEqual(keptBefore.logs)
    expect(await store.controls.pending([kept.turns[1].id])).toEqual([kept.control])
    expect(await store.queue.list(kept.session.id)).toEqual([kept.queued])

    expect(await store.sessions.delete(doomed.session.id)).toBe(false)
  })
}
