/**
 * The part writer on a MemoryStore, under jest's fake timers (nothing sleeps): when new parts
 * and streamed text reach the store (at the next flush tick, a multiple of `flushIntervalMs`,
 * the same for every turn; or at a part's close; never one write per delta), and what a failed
 * flush leaves for the next write. The fake clock starts on a tick.
 */
import type { MessageInfo, TextPart } from '../../src/core/types'
import { MemoryStore } from '../../src/store/memory/memory-store'
import type { Store, TransactionOptions } from '../../src/store/store'
import { PartWriter } from '../../src/turn/part-writer'
import { WriteQueue } from '../../src/turn/write-queue'
import { message, session, textPart } from '../../src/testing/store-conformance/fixtures'

const flushIntervalMs = 250

beforeEach(() => {
  // Timers and setImmediate (the boundary flush) are the clock's; promises run as they do.
  jest.useFakeTimers({ doNotFake: ['nextTick', 'queueMicrotask'] })
  jest.setSystemTime(Math.ceil(Date.now() / 1000) * 1000)
})
afterEach(() => {
  jest.useRealTimers()
})

/** A writer on a memory store holding one session; `transactions` counts the writes it made, `at` when each began and whether it was shared. */
async function writerOn(wrap: (store: MemoryStore) => Pick<Store, 'transaction'> = (store) => store) {
  const store = new MemoryStore()
  const s = session()
  await store.sessions.insert(s)
  const target = wrap(store)
  const counted = {
    transactions: 0,
    at: [] as Array<{ time: number; shared: boolean }>,
    transaction<T>(fn: (tx: Store) => Promise<T>, options?: TransactionOptions): Promise<T> {
      counted.transactions++
      counted.at.push({ time: Date.now(), shared: options?.shared === true })
      return target.transaction(fn)
    },
  }
  const queue = new WriteQueue()
  const errors: unknown[] = []
  const writer = new PartWriter({
    store: counted,
    queue,
    listener: { part() {}, delta() {}, message() {} },
    flushIntervalMs,
    now: () => Date.now(),
  })
  void writer.failed.then((error) => errors.push(error))
  const assistant = message(s.id, { role: 'assistant', turnId: 'trn_1' })
  /** Lets the clock run `ms`, then waits for every write queued so far to land (the queue runs them in order). */
  const advance = async (ms: number) => {
    await jest.advanceTimersByTimeAsync(ms)
    await queue.run(async () => {})
  }
  /** The text part as stored, or undefined when it is not. */
  const stored = async (part: TextPart) => (await store.messages.list(s.id)).flatMap((m) => m.parts).find((p) => p.id === part.id) as TextPart | undefined
  return { store, sessionId: s.id, writer, errors, assistant, advance, stored, counted }
}

/** Opens the assistant message and a text part, and lets their interval flush land. */
async function openPart(w: Awaited<ReturnType<typeof writerOn>>, assistant: MessageInfo): Promise<TextPart> {
  const part = textPart(assistant, '')
  w.writer.message(assistant)
  w.writer.add(part)
  await w.advance(flushIntervalMs + 2)
  return part
}

test('a new part and its text reach the store at the next tick, in one write, not before; a later change at the tick after', async () => {
  const w = await writerOn()
  const part = textPart(w.assistant, '')
  w.writer.message(w.assistant)
  w.writer.add(part)
  w.writer.append(part, 'hello')
  // A part's opening has no write of its own (it rides with the interval's flush, or a transition row).
  await w.advance(flushIntervalMs - 1)
  expect(await w.stored(part)).toBeUndefined()
  expect(w.counted.transactions).toBe(0)

  // At the tick: its timer fires and the flush lands (the fake clock runs a setImmediate asked
  // for inside a tick one millisecond later, hence 2), in a shared transaction.
  await w.advance(2)
  expect(await w.stored(part)).toMatchObject({ text: 'hello' })
  expect(w.counted.at).toEqual([{ time: expect.any(Number), shared: true }])

  // Text appended 2 ms after that tick: at the next one (248 ms later), not before.
  w.writer.append(part, ' world')
  await w.advance(flushIntervalMs - 4)
  expect(await w.stored(part)).toMatchObject({ text: 'hello' })
  await w.advance(4)
  expect(await w.stored(part)).toMatchObject({ text: 'hello world' })
})

test("two turns' writers, dirtied at different times, flush at the same tick (so their flushes can share a commit)", async () => {
  const first = await writerOn()
  const second = await writerOn()
  const a = textPart(first.assistant, 'a')
  first.writer.message(first.assistant)
  first.writer.add(a)
  await first.advance(90)
  const b = textPart(second.assistant, 'b')
  second.writer.message(second.assistant)
  second.writer.add(b)
  await first.advance(flushIntervalMs)
  expect(first.counted.at).toHaveLength(1)
  expect(second.counted.at).toEqual(first.counted.at)
})

test("a part's close is written at the next turn of the write queue, with whatever else is dirty", async () => {
  const w = await writerOn()
  const part = textPart(w.assistant, '')
  w.writer.message(w.assistant)
  w.writer.add(part)
  w.writer.append(part, 'done')
  part.time.end = Date.now()
  w.writer.changed(part)
  await w.advance(0)
  expect(await w.stored(part)).toMatchObject({ text: 'done', time: { end: part.time.end } })
  expect(w.counted.transactions).toBe(1)
})

test('deltas of one interval reach the store in one write', async () => {
  const w = await writerOn()
  const part = await openPart(w, w.assistant)
  const before = w.counted.transactions
  for (let i = 0; i < 50; i++) {
    w.writer.append(part, `${i} `)
    await w.advance(2)
  }
  await w.advance(flushIntervalMs)
  expect((await w.stored(part))!.text).toBe(Array.from({ length: 50 }, (_, i) => `${i} `).join(''))
  expect(w.counted.transactions - before).toBe(1)
})

test('a flush that fails leaves its rows dirty, and the next write carries them', async () => {
  let failures = 1
  const disk = new Error('disk I/O error')
  // The transaction fails after its writes: the store undoes them, as a failed commit would.
  const w = await writerOn((store) => ({
    transaction: (fn) =>
      store.transaction(async (tx) => {
        const result = await fn(tx)
        if (failures-- > 0) throw disk
        return result
      }),
  }))
  const part = textPart(w.assistant, 'first words')
  w.writer.message(w.assistant)
  w.writer.add(part)
  await w.advance(flushIntervalMs + 2)
  expect(w.errors).toEqual([disk])
  expect(await w.store.messages.list(w.sessionId)).toEqual([]) // nothing of the failed flush stayed

  // The next write (another part's boundary) carries the message and the part the failed one took.
  const next = textPart(w.assistant, 'second part')
  w.writer.changed(next)
  await w.advance(0)
  const [stored] = await w.store.messages.list(w.sessionId)
  expect(stored.info).toEqual(w.assistant)
  expect(stored.parts).toEqual([part, next])
  expect(w.errors).toEqual([disk])
})
