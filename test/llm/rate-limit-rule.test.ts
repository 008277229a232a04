/** The rate limit's rule over a model's row (pure): what it admits, when it says to come back, and how it corrects tokens. */
import { admitRequest, answeredRequest } from '../../src/llm/rate-limit-rule'
import type { CircuitRecord } from '../../src/store/store'

const t0 = 1_800_000_000_000
const admitAll = (row: CircuitRecord | undefined, at: number, n: number, limit: Parameters<typeof admitRequest>[3], tokens = 0) => {
  for (let i = 0; i < n; i++) {
    const admission = admitRequest(row, 'primary', at, limit, tokens)
    if (!admission.send) throw new Error(`request ${i} not admitted`)
    row = admission.row
  }
  return row!
}

test('requests within the limit are counted by the second they were admitted in; one more waits until the oldest second stops counting, a minute and the margin after it', () => {
  const row = admitAll(undefined, t0 + 400, 2, { requestsPerMinute: 3 })
  const later = admitAll(row, t0 + 5_700, 1, { requestsPerMinute: 3 })
  expect(later.admitted).toEqual([
    { second: t0, requests: 2, tokens: 0 },
    { second: t0 + 5_000, requests: 1, tokens: 0 },
  ])
  expect(later.version).toBe(3)
  expect(admitRequest(later, 'primary', t0 + 30_000, { requestsPerMinute: 3 }, 0)).toEqual({ send: false, until: t0 + 61_200 })
  // past it, the first second is dropped from the row
  const next = admitRequest(later, 'primary', t0 + 61_200, { requestsPerMinute: 3 }, 0)
  expect(next.send && next.row.admitted.map((s) => s.second)).toEqual([t0 + 5_000, t0 + 61_000])
})

test('tokens: the estimate counts; a request larger than the whole limit goes once the minute is empty', () => {
  const row = admitAll(undefined, t0, 1, { tokensPerMinute: 1_000 }, 600)
  expect(admitRequest(row, 'primary', t0 + 10, { tokensPerMinute: 1_000 }, 500)).toEqual({ send: false, until: t0 + 61_200 })
  expect(admitRequest(undefined, 'primary', t0, { tokensPerMinute: 1_000 }, 5_000).send).toBe(true)
})

test("an answered request counts from the second its answer began (the provider counted it on arrival, before), with the tokens it used", () => {
  const row = admitAll(undefined, t0 + 300, 2, { requestsPerMinute: 2, tokensPerMinute: 1_000 }, 400)
  // the first answer began 1.5 s after its admission (a loaded machine): it counts from t0 + 1000 on, with 250 tokens
  const answered = answeredRequest(row, { second: t0, tokens: 400 }, t0 + 1_800, 250)!
  expect(answered.admitted).toEqual([
    { second: t0, requests: 1, tokens: 400 },
    { second: t0 + 1_000, requests: 1, tokens: 250 },
  ])
  expect(answered.version).toBe(row.version + 1)
  // so the next request waits for its second too: the first's arrival was at most then
  expect(admitRequest(answered, 'primary', t0 + 61_300, { requestsPerMinute: 1 }, 0)).toEqual({ send: false, until: t0 + 62_200 })
  // the last of its second moves, and the second goes; nothing to move: no write
  const both = answeredRequest(answered, { second: t0, tokens: 400 }, t0 + 2_100)!
  expect(both.admitted.map((s) => [s.second, s.requests, s.tokens])).toEqual([
    [t0 + 1_000, 1, 250],
    [t0 + 2_000, 1, 400],
  ])
  expect(answeredRequest(row, { second: t0, tokens: 400 }, t0 + 900)).toBeUndefined()
  // a request whose second no longer counts is counted again from its answer
  expect(answeredRequest({ ...row, admitted: [] }, { second: t0 - 70_000, tokens: 0 }, t0)!.admitted).toEqual([{ second: t0, requests: 1, tokens: 0 }])
})

test("an engine whose clock is a little behind counts into its own second, and the row stays oldest first; the circuit's fields are kept", () => {
  const row = { ...admitAll(undefined, t0 + 2_000, 1, { requestsPerMinute: 5 }), failures: 2, heldUntil: t0 + 9_000 }
  const behind = admitAll(row, t0 + 1_500, 1, { requestsPerMinute: 5 })
  expect(behind.admitted.map((s) => s.second)).toEqual([t0 + 1_000, t0 + 2_000])
  expect(behind).toMatchObject({ failures: 2, heldUntil: t0 + 9_000 })
})
