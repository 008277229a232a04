/**
 * Queued prompts (QueueStore): round trips, the order of a session's queue, a
 * prompt taken once, which sessions' queues should be moving, and the queue's change mark (a
 * capability: a store without it passes that case, and its queue is read every time).
 */
import { awkwardStrings, big, newId, queued, rejection, session, turn } from './fixtures'
import { defineCases, type AddCase } from './cases'
import { expect } from './expect'
import type { Store } from '../../store/store'

async function sessions(store: Store, count: number) {
  const list = Array.from({ length: count }, () => session())
  for (const s of list) await store.sessions.insert(s)
  return list
}

export const queueCases = defineCases('queue', (it) => {
  queuedPromptCases(it)
  scheduledPromptCases(it)
  queueOrderCases(it)
  idleSessionCases(it)
})

function queuedPromptCases(it: AddCase): void {
  it('a queued prompt comes back as inserted: its input parts and options (JSON) round-trip; an unknown one is undefined', async (store) => {
    const [s] = await sessions(store, 1)
    const q = queued(s.id, {
      input: [{ type: 'text', text: awkwardStrings[0] }, { type: 'file', mediaType: 'image/png', data: 'aGVsbG8=', filename: awkwardStrings[6], image: true }],
      options: { model: 'fast', system: awkwardStrings[7], tools: ['read'], temperature: 0.7, stopSequences: ['\n'], providerOptions: { openai: { user: awkwardStrings[8] } } },
      time: { created: big },
    })
    await store.queue.insert(q)
    expect(await store.queue.get(q.id)).toEqual(q)
    expect(await store.queue.get('trn_unknown')).toBeUndefined()
  })
}

function scheduledPromptCases(it: AddCase): void {
  it('a prompt a schedule queued names the schedule and its occurrence, listed and read back as inserted', async (store) => {
    const [s] = await sessions(store, 1)
    const mine = queued(s.id)
    const fired = queued(s.id, { schedule: { id: 'sch_daily', occurrence: big + 1 } })
    for (const q of [mine, fired]) await store.queue.insert(q)
    expect(await store.queue.list(s.id)).toEqual([mine, fired])
    expect(await store.queue.get(fired.id)).toEqual(fired)
  })
}

function queueOrderCases(it: AddCase): void {
  it("list and oldest give a session's queue oldest first (id order); another session's prompts are not in it", async (store) => {
    const [s, other] = await sessions(store, 2)
    const ids = Array.from({ length: 4 }, () => newId('trn'))
    const prompts = ids.map((id, i) => queued(s.id, { id, input: [{ type: 'text', text: `p${i}` }] }))
    for (const i of [2, 0, 3, 1]) await store.queue.insert(prompts[i])
    await store.queue.insert(queued(other.id))
    expect(await store.queue.list(s.id)).toEqual(prompts)
    expect(await store.queue.oldest(s.id)).toEqual(prompts[0])
    expect(await store.queue.list('ses_unknown')).toEqual([])
    expect(await store.queue.oldest('ses_unknown')).toBeUndefined()
  })

  it('take deletes the prompt and is true once: the caller that took it starts it', async (store) => {
    const [s] = await sessions(store, 1)
    const [a, b] = [queued(s.id), queued(s.id)]
    await store.queue.insert(a)
    await store.queue.insert(b)
    expect(await store.queue.take(a.id)).toBe(true)
    expect(await store.queue.take(a.id)).toBe(false)
    expect(await store.queue.get(a.id)).toBeUndefined()
    expect(await store.queue.list(s.id)).toEqual([b])
    expect(await store.queue.take('trn_unknown')).toBe(false)
  })

  it('the change mark moves with each prompt or steer stored, directly or in a transaction; reads leave it as it is', async (store) => {
    const mark = store.queue.changeMark?.bind(store.queue)
    if (!mark) return
    const [s] = await sessions(store, 1)
    const before = mark()
    await store.queue.list(s.id)
    await store.queue.get('trn_unknown')
    expect(mark()).toBe(before)
    await store.queue.insert(queued(s.id, { kind: 'steer' }))
    const afterSteer = mark()
    expect(afterSteer === before).toBe(false)
    await store.transaction((tx) => tx.queue.insert(queued(s.id)))
    expect(mark() === afterSteer).toBe(false)
  })

  it('two takes of one prompt at once: exactly one gets it', async (store) => {
    const [s] = await sessions(store, 1)
    const q = queued(s.id)
    await store.queue.insert(q)
    const results = await Promise.all([1, 2, 3].map(() => store.queue.take(q.id)))
    expect(results.filter(Boolean)).toHaveLength(1)
  })
}

function idleSessionCases(it: AddCase): void {
  it('idleSessions lists each session with queued prompts and no unfinished turn once, in id order', async (store) => {
    const [busy, idleB, idleA, empty] = await sessions(store, 4)
    const running = turn(busy.id)
    await store.turns.insert(running, {})
    await store.turns.insert(turn(idleB.id, { state: 'completed', outcome: 'completed' }), {})
    await store.turns.insert(turn(empty.id), {})
    for (const s of [busy, idleB, idleB, idleA]) await store.queue.insert(queued(s.id))
    expect(await store.queue.idleSessions()).toEqual([idleB.id, idleA.id].sort())
    // The running turn ends: its session's queue should move now.
    await store.turns.update(running.id, { state: 'completed', outcome: 'completed', step: 1, attempt: 1, retryAt: null, error: null }, big)
    expect(await store.queue.idleSessions()).toEqual([busy.id, idleB.id, idleA.id].sort())
  })

  it("takeSteers deletes and returns the session's steers only, oldest first; its prompts and other sessions' steers stay", async (store) => {
    const [s, other] = await sessions(store, 2)
    const ids = Array.from({ length: 5 }, () => newId('trn'))
    const prompt = queued(s.id, { id: ids[0] })
    const steers = [queued(s.id, { id: ids[1], kind: 'steer', input: [{ type: 'text', text: awkwardStrings[0] }] }), queued(s.id, { id: ids[3], kind: 'steer' })]
    const otherSteer = queued(other.id, { id: ids[2], kind: 'steer' })
    for (const q of [steers[1], prompt, otherSteer, steers[0]]) await store.queue.insert(q)
    expect(await store.queue.get(steers[0].id)).toEqual(steers[0]) // the kind round-trips; a prompt has none
    expect(await store.queue.get(prompt.id)).toEqual(prompt)
    expect(await store.queue.takeSteers(s.id)).toEqual(steers)
    expect(await store.queue.takeSteers(s.id)).toEqual([])
    expect(await store.queue.list(s.id)).toEqual([prompt])
    expect(await store.queue.list(other.id)).toEqual([otherSteer])
  })

  it('a second prompt with the same id is refused as a duplicate; a prompt needs its session', async (store) => {
    const [s] = await sessions(store, 1)
    const q = queued(s.id)
    await store.queue.insert(q)
    expect((await rejection(store.queue.insert({ ...q, input: [] }))).message).toMatch(/unique|duplicate/i)
    expect(await store.queue.get(q.id)).toEqual(q)
    expect((await rejection(store.queue.insert(queued('ses_unknown')))).message).toMatch(/foreign key/i)
  })
}
