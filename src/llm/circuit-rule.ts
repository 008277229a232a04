/**
 * A model's circuit breaker, as a rule over its stored row (pure: the clock is a parameter).
 * Closed, it counts the provider's failures in a window; at `failureThreshold` it opens for
 * `openMs`, and no request goes to the model. Then it is half-open: one request (the probe) may
 * ask it; the probe's answer closes it, the probe's failure opens it again. Apart from the
 * circuit, a provider that said when to come back (`retry-after`) holds the model until then for
 * every engine, as it would have told each of them.
 */
import type { CircuitRecord } from '../store/store'

/** `createEngine({ circuitBreaker })`. */
export interface CircuitBreakerOptions {
  /** The provider's failures within `windowMs` that open a model's circuit. */
  failureThreshold: number
  windowMs: number
  /** How long an open circuit sends the model nothing before it half-opens. */
  openMs: number
}

/**
 * Five failures of the provider in a minute, across the fleet: more than one turn's retries of a
 * blip (two attempts a model with a fallback), fewer than a few turns each learning alone that
 * the provider is down. Thirty seconds open: what a provider's overload usually lasts.
 */
export const defaultCircuitBreaker: CircuitBreakerOptions = Object.freeze({ failureThreshold: 5, windowMs: 60_000, openMs: 30_000 })

export type CircuitState = 'closed' | 'open' | 'half-open'

/**
 * What a request to the model may do now: go (the probe of a half-open circuit, or not), or wait
 * until a time (`held`: the provider asked for the wait, the circuit is not open).
 */
export type CircuitAdmission = { send: true; probe?: CircuitRecord } | { send: false; until: number; held?: true }

/** The longest a request waits on another's probe before it looks again. */
const probeLookMs = 2_000

export function circuitState(record: CircuitRecord | undefined, now: number): CircuitState {
  if (!record || record.openUntil === null) return 'closed'
  return record.openUntil > now ? 'open' : 'half-open'
}

/**
 * Whether a request may go: a closed circuit sends; an open one waits until it half-opens; a
 * half-open one sends the request that takes its probe (`probe`: the row to write), and the
 * others wait on the probe.
 */
export function admit(record: CircuitRecord | undefined, now: number, options: CircuitBreakerOptions): CircuitAdmission {
  const state = circuitState(record, now)
  if (record?.heldUntil != null && record.heldUntil > now && state !== 'open') return { send: false, until: record.heldUntil, held: true }
  if (!record || state === 'closed') return { send: true }
  if (state === 'open') return { send: false, until: record.openUntil! }
  if (record.probeUntil !== null && record.probeUntil > now) return { send: false, until: Math.min(record.probeUntil, now + probeLookMs) }
  // (a probe that never answers, its engine gone, is given up after `openMs`)
  return { send: true, probe: { ...record, probeUntil: now + options.openMs, version: record.version + 1 } }
}

/**
 * The row after a failure of the provider's kind, and the hold it asked for (`heldUntil`, a
 * `retry-after`), in one write over `record`; undefined when nothing changes (the circuit was
 * already open, the model held as long already).
 */
export function afterFailure(record: CircuitRecord | undefined, model: string, now: number, options: CircuitBreakerOptions, heldUntil?: number): CircuitRecord | undefined {
  const counted = countedFailure(record, model, now, options)
  const held = heldUntil === undefined ? undefined : heldTo(counted ?? record, model, heldUntil, now)
  return held ? { ...held, version: (record?.version ?? 0) + 1 } : counted
}

/** The row with one more failure counted; undefined when the circuit is open already. */
function countedFailure(record: CircuitRecord | undefined, model: string, now: number, options: CircuitBreakerOptions): CircuitRecord | undefined {
  const opened = (failures: number, since: number): CircuitRecord => ({
    ...(record ?? modelRow(model, now)),
    failures,
    since,
    openUntil: failures >= options.failureThreshold ? now + options.openMs : null,
    probeUntil: null,
    version: (record?.version ?? 0) + 1,
  })
  const state = circuitState(record, now)
  if (!record) return opened(1, now)
  if (state === 'open') return undefined
  // A failure while half-open (the probe's, or a request sent before it opened) opens it again.
  if (state === 'half-open') return { ...record, failures: record.failures + 1, openUntil: now + options.openMs, probeUntil: null, version: record.version + 1 }
  return now - record.since >= options.windowMs ? opened(1, now) : opened(record.failures + 1, record.since)
}

/** The row after the provider answered a request of a half-open circuit (the probe): closed; undefined when nothing changes. */
export function afterAnswer(record: CircuitRecord | undefined, now: number): CircuitRecord | undefined {
  if (!record || circuitState(record, now) !== 'half-open') return undefined
  return { ...record, failures: 0, since: now, openUntil: null, probeUntil: null, version: record.version + 1 }
}

/** The row after a probe ended without an answer (its step aborted): another request may probe. */
export function probeReleased(record: CircuitRecord | undefined, now: number): CircuitRecord | undefined {
  if (!record || circuitState(record, now) !== 'half-open' || record.probeUntil === null) return undefined
  return { ...record, probeUntil: null, version: record.version + 1 }
}

/**
 * The row after the provider said not to ask before `until` (a `retry-after`, on a failure
 * already counted by `afterFailure` or not); undefined when the model is held that long already.
 */
export function heldTo(record: CircuitRecord | undefined, model: string, until: number, now: number): CircuitRecord | undefined {
  if (record?.heldUntil != null && record.heldUntil >= until) return undefined
  const base = record ?? modelRow(model, now)
  return { ...base, heldUntil: until, version: base.version + 1 }
}

/**
 * A model's row before anything was written to it (version 0: its first put inserts it), the
 * base of the first write of the circuit and of the rate limit alike.
 */
export function modelRow(model: string, now: number): CircuitRecord {
  return { model, failures: 0, since: now, openUntil: null, probeUntil: null, heldUntil: null, admitted: [], version: 0 }
}
