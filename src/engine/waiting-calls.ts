/**
 * `engine.waiting()`: what waits on a person or the world, across sessions: each call of a turn
 * in a waiting state (the chart's `meta.wait`), held by an engine or parked. What an app that
 * restarts reads to find the approvals, calls in doubt, deferred calls and sleeps that wait for it.
 */
import { waitOf } from '../../machines/turn.machine'
import { optionalString } from '../core/arguments'
import { InvalidArgumentError } from '../core/errors'
import { parkedOwner } from '../core/parking'
import type { Store } from '../store/store'
import { awaitedCallsIn, type AwaitedCall } from '../chart/awaited-calls'
import { storedToolParts } from '../control/stored-turns'
import type { EngineCall } from './engine-calls'

/** What waits: a call (what `approve`, `deny`, `resolveCall` or `wake` settles), or a throttled turn. */
export type WaitingEntry = WaitingCallEntry | ThrottledEntry

/** The waiting turn an entry is of. */
interface WaitingTurn {
  turnId: string
  sessionId: string
  /** The turn's waiting state (`awaiting-approval`, `call-in-doubt`, `awaiting-deferred`, `sleeping`, `throttled`). */
  state: string
  /** No engine holds the turn: the call that settles it (or the sweep past its deadline) takes it. */
  parked: boolean
}

/** A call that waits, with its turn. */
export interface WaitingCallEntry extends AwaitedCall, WaitingTurn {}

/** A turn whose step waits for its model's rate limit (`rateLimits`) until `deadline`: whichever engine sweeps then goes on with it. */
export interface ThrottledEntry extends WaitingTurn {
  kind: 'throttled'
  deadline: number
}

export interface WaitingOptions {
  /** Only this session's turns. */
  sessionId?: string
  /** Only the turns of this tenant's sessions (`createSession({ tenant })`). */
  tenant?: string
}

export interface WaitingCalls {
  /**
   * What waits on a person or the world across sessions (approvals, calls in doubt, deferred
   * calls, sleeps; and turns throttled by a rate limit, `kind: 'throttled'`), oldest turn first, parked turns included; `{ sessionId }` or `{ tenant }`
   * narrows it. `since` when the call's part says when it began to wait, `deadline` when its
   * wait ends by itself.
   */
  waiting(options?: WaitingOptions): Promise<WaitingEntry[]>
}

/**
 * @example
 * const engine = { ...waitingCalls({ store, call }), ... }
 */
export function waitingCalls({ store, call }: { store: Store; call: EngineCall }): WaitingCalls {
  return {
    waiting: (options = {}) => call('list what waits', () => listWaiting(store, checkOptions(options))),
  }
}

function checkOptions(options: WaitingOptions): WaitingOptions {
  if (typeof options !== 'object' || options === null) throw new InvalidArgumentError('options', options, 'an object like { sessionId } or { tenant }')
  const sessionId = optionalString('options.sessionId', options.sessionId)
  const tenant = optionalString('options.tenant', options.tenant)
  return { ...(sessionId !== undefined ? { sessionId } : {}), ...(tenant !== undefined ? { tenant } : {}) }
}

async function listWaiting(store: Store, options: WaitingOptions): Promise<WaitingEntry[]> {
  const turns = (await store.turns.open()).filter((turn) => waitOf(turn.state) && (options.sessionId === undefined || turn.sessionId === options.sessionId))
  const entries: WaitingEntry[] = []
  for (const turn of turns) {
    if (options.tenant !== undefined && (await store.sessions.get(turn.sessionId))?.tenant !== options.tenant) continue
    const waiting: WaitingTurn = { turnId: turn.id, sessionId: turn.sessionId, state: turn.state, parked: turn.owner === parkedOwner }
    // (a wait for a time waits on no call: the turn is the entry, its deadline the row's)
    if (waitOf(turn.state)!.awaits === 'time') entries.push({ ...waiting, kind: 'throttled', deadline: turn.retryAt ?? 0 })
    else for (const awaited of awaitedCallsIn(await storedToolParts(store, turn.sessionId, turn.id))) entries.push({ ...waiting, ...awaited })
  }
  return entries
}
