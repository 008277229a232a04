/**
 * Queued prompts (`whenBusy`): enqueued prompts from two engines run in order, one each;
 * `engine.queue` lists them; a queued prompt can be cancelled; `interrupt` aborts the running
 * turn first; `reject` (the default) throws SessionBusyError.
 */
import { createEngine, QueuedPromptCancelledError, SessionBusyError, type Engine } from '../../src'
import { createHarness, modelFor, type Harness } from '../support/harness'

let h: Harness
let other: Engine | undefined
afterEach(async () => {
  await other?.close()
  other = undefined
  await h?.close()
})

/** Resolves when `engine` has stored the queued prompt `id` (subscribe right after `prompt`). */
const stored = (engine: Engine, id: string) =>
  new Promise<void>((resolve) => {
    const off = engine.subscribe((e) => {
      if (e.type === 'prompt.queued' && e.id === id) {
        off()
        resolve()
      }
    })
  })

const userTexts = async (engine: Engine, sessionId: string) =>
  (await engine.messages(sessionId)).filter((m) => m.info.role === 'user').map((m) => (m.parts[0] as { text: string }).text)

test('prompts enqueued from two engines run in order, one each, after the running turn', async () => {
  h = await createHarness()
  other = await createEngine({ database: h.dbPath, model: modelFor(h.server), recovery: { onOpen: false, intervalMs: 0 } })
  const s = await h.engine.createSession()
  h.server.hang()
  const first = h.engine.prompt(s.id, 'one')
  await h.server.waitForCall(1)
  // one after the other: two SQLite connections writing at the same moment can fail with
  // SQLITE_BUSY (deferred transactions), which is not what this test is about
  const second = h.engine.prompt(s.id, 'two', { whenBusy: 'enqueue' })
  await stored(h.engine, second.id)
  const third = other.prompt(s.id, 'three', { whenBusy: 'enqueue', temperature: 0.7 })
  await stored(other, third.id)
  // both are stored, in order, visible from either engine
  const queued = await other.queue(s.id)
  expect(queued.map((q) => [q.id, q.input])).toEqual([
    [second.id, [{ type: 'text', text: 'two' }]],
    [third.id, [{ type: 'text', text: 'three' }]],
  ])
  expect(queued[1].options).toEqual({ temperature: 0.7 })
  h.server.text('answer two').text('answer three')
  first.abort()
  const [r2, r3] = await Promise.all([second.done, third.done])
  expect(r2).toMatchObject({ turnId: second.id, outcome: 'completed', text: 'answer two' })
  expect(r3).toMatchObject({ turnId: third.id, outcome: 'completed', text: 'answer three' })
  expect(await userTexts(h.engine, s.id)).toEqual(['one', 'two', 'three'])
  expect(h.server.requests.map((r) => r.body.messages.filter((m: { role: string }) => m.role === 'user').at(-1).content)).toEqual(['one', 'two', 'three'])
  expect(h.server.requests[2].body.temperature).toBe(0.7)
  expect(await h.engine.queue(s.id)).toEqual([])
  const turns = await Promise.all([second.id, third.id].map((id) => h.engine.getTurn(id)))
  expect(turns.map((t) => t?.outcome)).toEqual(['completed', 'completed'])
})

test('a prompt enqueued on an idle session starts at once; a queued prompt can be cancelled', async () => {
  h = await createHarness()
  const s = await h.engine.createSession()
  h.server.hang()
  const first = h.engine.prompt(s.id, 'one', { whenBusy: 'enqueue' })
  await h.server.waitForCall(1)
  expect(h.engine.activeTurn(s.id)?.id).toBe(first.id)
  const second = h.engine.prompt(s.id, 'two', { whenBusy: 'enqueue' })
  await stored(h.engine, second.id)
  expect(await second.cancel()).toBe(true)
  expect(await second.cancel()).toBe(false)
  await expect(second.done).rejects.toBeInstanceOf(QueuedPromptCancelledError)
  expect(await h.engine.queue(s.id)).toEqual([])
  await h.engine.abort(s.id)
  expect((await first.done).outcome).toBe('aborted')
  expect(await userTexts(h.engine, s.id)).toEqual(['one'])
  expect(h.server.calls).toBe(1)
})

test("whenBusy 'interrupt' aborts the running turn first; 'reject' (default) throws SessionBusyError", async () => {
  h = await createHarness()
  const s = await h.engine.createSession()
  h.server.hang()
  const first = h.engine.prompt(s.id, 'one')
  await h.server.waitForCall(1)
  expect(() => h.engine.prompt(s.id, 'two', { whenBusy: 'reject' })).toThrow(SessionBusyError)
  h.server.text('instead')
  const second = h.engine.prompt(s.id, 'two', { whenBusy: 'interrupt' })
  expect((await first.done).outcome).toBe('aborted')
  expect(await second.done).toMatchObject({ outcome: 'completed', text: 'instead' })
  expect(await userTexts(h.engine, s.id)).toEqual(['one', 'two'])
})
