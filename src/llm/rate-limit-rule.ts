/**
 * A model's rate limit (`rateLimits`), as a rule over its stored row (pure: the clock is a
 * parameter). The row keeps the requests admitted in the last minute by the second they were
 * admitted in; a request is admitted when one more, with its estimated tokens, stays within the
 * limit over the minute before it; otherwise it is told when it would be.
 */
import type { AdmittedSecond, CircuitRecord } from '../store/store'
import { modelRow } from './circuit-rule'

/** `createEngine({ rateLimits: { [modelName]: RateLimit } })`: held across every engine on the database. */
export interface RateLimit {
  /** Requests sent to the model in any minute. */
  requestsPerMinute?: number
  /** Tokens (input and output, as the provider reports them) of the requests sent in any minute. */
  tokensPerMinute?: number
}

/** What a request may do: go (the row that counts it, to write; the second it is counted in), or wait until a time. */
export type RateAdmission = { send: true; row: CircuitRecord; second: number } | { send: false; until: number }

const secondMs = 1_000
const minuteMs = 60_000
/**
 * A request reaches the provider a little after it was admitted, and not always as soon as the
 * one before it: a second's requests count for this much past the minute, so that the provider,
 * counting by arrival, sees no more than the limit in any minute.
 */
const arrivalMarginMs = 200

/** When a second's requests stop counting: a minute after the last moment they could have been admitted, plus the margin. */
const expiresAt = (second: AdmittedSecond) => second.second + secondMs + minuteMs + arrivalMarginMs

/**
 * Whether a request of `tokens` (estimated) may go to the model now: the row with it counted, or
 * when it may. A request larger than the whole token limit goes once the minute is empty (never
 * would be a wait without end).
 *
 * @example
 * admitRequest(row, 'primary', Date.now(), { requestsPerMinute: 30 }, 1_200) // { send: false, until: 1733300061200 }
 */
export function admitRequest(record: CircuitRecord | undefined, model: string, now: number, limit: RateLimit, tokens: number): RateAdmission {
  const base = record ?? modelRow(model, now)
  const counted = base.admitted.filter((second) => expiresAt(second) > now)
  // Dropping the oldest seconds one by one: the first that makes room says when the request may go.
  for (let dropped = 0; dropped <= counted.length; dropped++) {
    if (!fits(counted.slice(dropped), limit, tokens)) continue
    if (dropped > 0) return { send: false, until: expiresAt(counted[dropped - 1]) }
    const second = now - (now % secondMs)
    return { send: true, row: { ...base, admitted: withRequest(counted, second, tokens), version: base.version + 1 }, second }
  }
  return { send: false, until: now + secondMs }
}

/**
 * The row once the provider answered a request admitted in `admitted` (its second) with
 * `tokens` counted: the request counts from the second the answer began (`at`) instead, with
 * the tokens the provider reported (`used`; undefined: the estimate stays). The provider counts
 * a request when it arrives, which is after it was admitted (by as much as the machine's load
 * makes it) and before its answer began: counted from its answer, no request is let go a minute
 * after an earlier one arrived sooner than a minute after it. Undefined when nothing changes.
 *
 * @example
 * answeredRequest(row, { second: 1733300000000, tokens: 1200 }, 1733300001400, 950)
 */
export function answeredRequest(record: CircuitRecord | undefined, admitted: { second: number; tokens: number }, at: number, used?: number): CircuitRecord | undefined {
  const second = at - (at % secondMs)
  const tokens = used ?? admitted.tokens
  if (!record || (second === admitted.second && tokens === admitted.tokens)) return undefined
  // (its own second may no longer count: then it is counted again from its answer's, as it should be)
  const without = record.admitted.flatMap((s) =>
    s.second !== admitted.second ? [s] : s.requests > 1 ? [{ ...s, requests: s.requests - 1, tokens: Math.max(0, s.tokens - admitted.tokens) }] : [],
  )
  return { ...record, admitted: withRequest(without, second, tokens), version: record.version + 1 }
}

function fits(seconds: readonly AdmittedSecond[], limit: RateLimit, tokens: number): boolean {
  const requests = seconds.reduce((sum, s) => sum + s.requests, 0)
  const used = seconds.reduce((sum, s) => sum + s.tokens, 0)
  if (limit.requestsPerMinute !== undefined && requests + 1 > limit.requestsPerMinute) return false
  return limit.tokensPerMinute === undefined || used + tokens <= limit.tokensPerMinute || used === 0
}

/** The seconds with one more request in `second`, oldest first (engines' clocks differ a little: it may not be the last). */
function withRequest(seconds: readonly AdmittedSecond[], second: number, tokens: number): AdmittedSecond[] {
  const others = seconds.filter((s) => s.second !== second)
  const same = seconds.find((s) => s.second === second)
  const counted = { second, requests: (same?.requests ?? 0) + 1, tokens: (same?.tokens ?? 0) + tokens }
  return [...others, counted].sort((a, b) => a.second - b.second)
}
