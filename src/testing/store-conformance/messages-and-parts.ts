/**
 * Messages and parts (MessageStore): round trips of every field (text that is
 * itself JSON stays text), id order, upserts that replace, the history from the latest summary,
 * deleteAfter, assistantInfos, and rows that need their session and message.
 */
import type { MessageInfo, Part } from '../../core/types'
import { awkwardStrings, big, message, newId, rejection, session, textPart, toolPart } from './fixtures'
import { defineCases, type AddCase } from './cases'
import { expect } from './expect'
import type { Store } from '../../store/store'

async function withSession(store: Store) {
  const s = session()
  await store.sessions.insert(s)
  return s
}

export const messagesAndPartsCases = defineCases('messages and parts', (it) => {
  messageInfoCases(it)
  partOrderCases(it)
  partWriteCases(it)
  listCases(it)
  existsCases(it)
  integrityCases(it)
})

function messageInfoCases(it: AddCase): void {
  it('a message comes back as upserted, every field of its info included; a user message without a turn has no turnId', async (store) => {
    const s = await withSession(store)
    const user = message(s.id)
    const assistant: MessageInfo = {
      ...message(s.id, { role: 'assistant', turnId: 'trn_a' }),
      time: { created: big, completed: big + 9 },
      error: { name: 'APIError', message: awkwardStrings[8], statusCode: 429, isRetryable: true } as MessageInfo['error'],
      finish: 'stop',
      tokens: { input: 1_000_000, output: 20, reasoning: 3, cache: { read: 4, write: 5 } },
      cost: 0.25,
    }
    await store.messages.upsert(user)
    await store.messages.upsert(assistant)
    const [u, a] = await store.messages.list(s.id)
    expect(u).toEqual({ info: user, parts: [] })
    expect(u.info).not.toHaveProperty('turnId')
    expect(u.info).not.toHaveProperty('summary')
    expect(a).toEqual({ info: assistant, parts: [] })
  })

  it('a second upsert of a message replaces its changing fields (time, error, finish, usage), dropping the ones it no longer has', async (store) => {
    const s = await withSession(store)
    const m = message(s.id, { role: 'assistant', turnId: 'trn_a', error: { name: 'X', message: 'first' } as MessageInfo['error'], finish: 'error' })
    await store.messages.upsert(m)
    const completed: MessageInfo = { id: m.id, sessionId: s.id, role: 'assistant', turnId: 'trn_a', time: { created: big, completed: big + 3 }, finish: 'stop', cost: 1.5 }
    await store.messages.upsert(completed)
    const [read] = await store.messages.list(s.id)
    expect(read.info).toEqual(completed)
    expect(read.info).not.toHaveProperty('error')
  })
}

function partOrderCases(it: AddCase): void {
  it('parts come back under their message in id order, whatever order they were written in', async (store) => {
    const s = await withSession(store)
    const a = message(s.id)
    const b = message(s.id, { role: 'assistant', turnId: 'trn_a' })
    const empty = message(s.id, { role: 'assistant', turnId: 'trn_b' })
    for (const m of [a, b, empty]) await store.messages.upsert(m)
    const parts = [textPart(a, 'a1'), textPart(b, 'b1'), toolPart(b), textPart(b, 'b3'), textPart(a, 'a2')]
    await store.messages.upsertParts([parts[3], parts[0]], big)
    await store.messages.upsertParts([parts[4], parts[2], parts[1]], big)
    const read = await store.messages.list(s.id)
    expect(read.map((m) => m.info.id)).toEqual([a.id, b.id, empty.id])
    expect(read[0].parts).toEqual([parts[0], parts[4]])
    expect(read[1].parts).toEqual([parts[1], parts[2], parts[3]])
    expect(read[2].parts).toEqual([])
  })

  it('messages come back in id order, whatever order they were written in', async (store) => {
    const s = await withSession(store)
    const ids = Array.from({ length: 12 }, () => newId('msg'))
    for (const id of [...ids].reverse()) await store.messages.upsert(message(s.id, { id }))
    expect((await store.messages.list(s.id)).map((m) => m.info.id)).toEqual(ids)
  })

  it('a second upsert of a part replaces it: new text, end time, tool state', async (store) => {
    const s = await withSession(store)
    const m = message(s.id, { role: 'assistant', turnId: 'trn_a' })
    await store.messages.upsert(m)
    const text = textPart(m, 'half')
    const tool = toolPart(m, { state: { status: 'running', input: { q: 1 }, time: { start: big } } })
    const other = textPart(m, 'untouched')
    await store.messages.upsertParts([text, tool, other], big)
    const closed = { ...text, text: 'half and the rest', time: { start: big, end: big + 7 } }
    const done = { ...tool, state: { status: 'error' as const, input: { q: 1 }, error: 'interrupted', metadata: { interrupted: true }, time: { start: big, end: big + 8 } } }
    await store.messages.upsertParts([closed, done], big + 8)
    const [read] = await store.messages.list(s.id)
    expect(read.parts).toEqual([closed, done, other])
  })
}

function partWriteCases(it: AddCase): void {
  it('a part given twice in one call is written once, as given last', async (store) => {
    const s = await withSession(store)
    const m = message(s.id)
    await store.messages.upsert(m)
    const part = textPart(m, 'first')
    const other = textPart(m, 'other')
    await store.messages.upsertParts([part, other, { ...part, text: 'last' }], big)
    expect((await store.messages.list(s.id))[0].parts).toEqual([{ ...part, text: 'last' }, other])
  })

  it('strings round-trip as they were: text that is itself JSON stays text, emoji and unicode stay whole', async (store) => {
    const s = await withSession(store)
    const m = message(s.id, { role: 'assistant', turnId: 'trn_a' })
    await store.messages.upsert(m)
    const parts: Part[] = awkwardStrings.map((text) => textPart(m, text, { providerMetadata: { anthropic: { signature: text } } }))
    parts.push(
      toolPart(m, { callId: awkwardStrings[0], state: { status: 'completed', input: { json: awkwardStrings[0], list: awkwardStrings }, output: awkwardStrings[6], time: { start: big, end: big } } }),
      { id: newId('prt'), sessionId: s.id, messageId: m.id, type: 'file', mediaType: 'image/png', filename: awkwardStrings[7], data: Buffer.from(awkwardStrings.join('')).toString('base64'), image: true },
      { id: newId('prt'), sessionId: s.id, messageId: m.id, type: 'source', sourceType: 'url', sourceId: 'src_1', url: 'https://example.com/?q="x"&y=ü', title: awkwardStrings[1] },
    )
    await store.messages.upsertParts(parts, big)
    const [read] = await store.messages.list(s.id)
    expect(read.parts).toEqual(parts)
    for (const [i, text] of awkwardStrings.entries()) expect((read.parts[i] as { text: unknown }).text).toBe(text)
    expect(typeof (read.parts[0] as { time: { start: unknown } }).time.start).toBe('number')
  })

  it('an empty upsertParts writes nothing, and more parts than one statement holds are all written', async (store) => {
    const s = await withSession(store)
    const m = message(s.id)
    await store.messages.upsert(m)
    await store.messages.upsertParts([], big)
    expect((await store.messages.list(s.id))[0].parts).toEqual([])
    const many = Array.from({ length: 150 }, (_, i) => textPart(m, `part ${i}`))
    await store.messages.upsertParts([...many].reverse(), big)
    expect((await store.messages.list(s.id))[0].parts).toEqual(many)
  })
}

function listCases(it: AddCase): void {
  it("list returns only the session's messages; an unknown session has none", async (store) => {
    const s1 = await withSession(store)
    const s2 = await withSession(store)
    const m1 = message(s1.id)
    const m2 = message(s2.id)
    await store.messages.upsert(m1)
    await store.messages.upsert(m2)
    await store.messages.upsertParts([textPart(m1, 'one'), textPart(m2, 'two')], big)
    expect((await store.messages.list(s1.id)).map((m) => [m.info.id, m.parts.map((p) => (p as { text: string }).text)])).toEqual([[m1.id, ['one']]])
    expect(await store.messages.list('ses_unknown')).toEqual([])
  })

  it('fromLatestSummary starts at the latest summary message, with the parts of it and of what follows', async (store) => {
    const s = await withSession(store)
    const before = message(s.id)
    const first = message(s.id, { role: 'assistant', turnId: 'trn_1', summary: true })
    const between = message(s.id)
    const latest = message(s.id, { role: 'assistant', turnId: 'trn_2', summary: true })
    const after = message(s.id, { role: 'assistant', turnId: 'trn_2' })
    const all = [before, first, between, latest, after]
    for (const m of all) await store.messages.upsert(m)
    await store.messages.upsertParts(all.map((m) => textPart(m, m.id)), big)

    const fromSummary = await store.messages.list(s.id, { fromLatestSummary: true })
    expect(fromSummary.map((m) => m.info.id)).toEqual([latest.id, after.id])
    expect(fromSummary.map((m) => m.parts.map((p) => (p as { text: string }).text))).toEqual([[latest.id], [after.id]])
    expect(fromSummary[0].info.summary).toBe(true)
    expect((await store.messages.list(s.id)).map((m) => m.info.id)).toEqual(all.map((m) => m.id))
  })

  it('fromLatestSummary without a summary in the session returns every message', async (store) => {
    const s = await withSession(store)
    const other = await withSession(store)
    // A summary of another session does not cut this one's history.
    await store.messages.upsert(message(other.id, { role: 'assistant', summary: true }))
    const ms = [message(s.id), message(s.id, { role: 'assistant', turnId: 'trn_1' })]
    for (const m of ms) await store.messages.upsert(m)
    expect((await store.messages.list(s.id, { fromLatestSummary: true })).map((m) => m.info.id)).toEqual(ms.map((m) => m.id))
  })
}

function existsCases(it: AddCase): void {
  it("exists says whether the message is the session's", async (store) => {
    const s1 = await withSession(store)
    const s2 = await withSession(store)
    const m = message(s1.id)
    await store.messages.upsert(m)
    expect(await store.messages.exists(s1.id, m.id)).toBe(true)
    expect(await store.messages.exists(s2.id, m.id)).toBe(false)
    expect(await store.messages.exists(s1.id, 'msg_unknown')).toBe(false)
  })

  it("deleteAfter deletes the session's later messages and their parts, keeping that message, earlier ones and other sessions'", async (store) => {
    const s = await withSession(store)
    const other = await withSession(store)
    const ms = [message(s.id), message(s.id, { role: 'assistant' }), message(s.id), message(s.id, { role: 'assistant' })]
    const otherLater = message(other.id) // a later id, in another session
    for (const m of [...ms, otherLater]) await store.messages.upsert(m)
    await store.messages.upsertParts([...ms, otherLater].map((m) => textPart(m, m.id)), big)

    await store.messages.deleteAfter(s.id, ms[1].id)

    const kept = await store.messages.list(s.id)
    expect(kept.map((m) => m.info.id)).toEqual([ms[0].id, ms[1].id])
    expect(kept.map((m) => m.parts.length)).toEqual([1, 1])
    expect(await store.messages.exists(s.id, ms[2].id)).toBe(false)
    expect((await store.messages.list(other.id)).map((m) => [m.info.id, m.parts.length])).toEqual([[otherLater.id, 1]])
    // The deleted messages' ids are free again (their parts went with them).
    await store.messages.upsert(ms[3])
    expect((await store.messages.list(s.id)).at(-1)).toEqual({ info: ms[3], parts: [] })
  })

  it('assistantInfos returns the assistant messages of the given turns, in id order', async (store) => {
    const s = await withSession(store)
    const a1 = message(s.id, { role: 'assistant', turnId: 'trn_1', tokens: { input: 1, output: 2, reasoning: 0, cache: { read: 0, write: 0 } }, cost: 0.5 })
    const u2 = message(s.id, { role: 'user', turnId: 'trn_2' })
    const a2 = message(s.id, { role: 'assistant', turnId: 'trn_2' })
    const a1b = message(s.id, { role: 'assistant', turnId: 'trn_1' })
    const a3 = message(s.id, { role: 'assistant', turnId: 'trn_3' })
    for (const m of [a1b, a3, u2, a2, a1]) await store.messages.upsert(m)
    expect(await store.messages.assistantInfos(['trn_1', 'trn_2'])).toEqual([a1, a2, a1b])
    expect(await store.messages.assistantInfos([])).toEqual([])
    expect(await store.messages.assistantInfos(['trn_unknown'])).toEqual([])
  })
}

function integrityCases(it: AddCase): void {
  it('a message needs its session and a part its message: refused otherwise, and nothing is written', async (store) => {
    const s = await withSession(store)
    const orphan = message('ses_unknown')
    expect((await rejection(store.messages.upsert(orphan))).message).toMatch(/foreign key/i)
    const m = message(s.id)
    await store.messages.upsert(m)
    const ok = textPart(m)
    const lost = { ...textPart(m), messageId: 'msg_unknown' }
    expect((await rejection(store.messages.upsertParts([lost], big))).message).toMatch(/foreign key/i)
    await store.messages.upsertParts([ok], big)
    expect(await store.messages.list(s.id)).toEqual([{ info: m, parts: [ok] }])
    expect(await store.messages.list('ses_unknown')).toEqual([])
  })

  it('what a caller does to the objects it wrote or read does not change what is stored', async (store) => {
    const s = await withSession(store)
    const m = message(s.id, { role: 'assistant', turnId: 'trn_a' })
    const part = textPart(m, 'stored')
    await store.messages.upsert(m)
    await store.messages.upsertParts([part], big)
    m.time.created = 0
    part.text = 'changed after the write'
    const read = await store.messages.list(s.id)
    ;(read[0].parts[0] as { text: string }).text = 'changed after the read'
    read[0].info.time.created = 1
    const again = await store.messages.list(s.id)
    expect((again[0].parts[0] as { text: string }).text).toBe('stored')
    expect(again[0].info.time.created).toBe(big)
  })
}
