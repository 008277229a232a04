/**
 * What an unfinished turn is doing, as the page says it: an engine runs it (its owner holds a
 * lease that has not run out), it waits on a person or the world (a parkable state, such as
 * awaiting approval, held by an engine or parked: nobody needs to run it), or nobody runs it (released by a closed engine, or its process died): it is not live,
 * and the next engine on the database resumes it. A DOM-free module: the page and the tests
 * share it.
 */
import { parkableStates } from '../../../machines/parkable-states'
import { parkedOwner } from '../../core/parking'
import type { TurnRecord } from '../../core/types'

export type TurnActivity = 'ended' | 'running' | 'waiting' | 'unowned'

/** The waits on tool calls (the chart's `call-wait` states; no XState on the page): a person or the world settles them. */
const callWaits: ReadonlySet<string> = new Set(['call-in-doubt', 'awaiting-deferred'])

/**
 * @example
 * turnActivity({ outcome: null, state: 'retry-waiting', owner: null, leaseUntil: null }, Date.now()) // 'unowned'
 */
export function turnActivity(turn: Pick<TurnRecord, 'outcome' | 'state' | 'owner' | 'leaseUntil'>, now: number): TurnActivity {
  if (turn.outcome !== null) return 'ended'
  if (parkableStates.has(turn.state) || callWaits.has(turn.state) || turn.owner === parkedOwner) return 'waiting'
  return turn.owner != null && turn.leaseUntil != null && turn.leaseUntil > now ? 'running' : 'unowned'
}

/** The page's status line for a session's turns (connected). */
export function activityStatus(turns: Array<Pick<TurnRecord, 'outcome' | 'state' | 'owner' | 'leaseUntil'>>, now: number): { text: string; live: boolean } {
  const activities = new Set(turns.map((turn) => turnActivity(turn, now)))
  if (activities.has('running')) return { text: '● live: a turn is running', live: true }
  // A waiting turn is not live: nothing runs until someone settles it (it may be parked, held by no engine).
  if (activities.has('waiting')) return { text: '◐ waiting: a turn waits for a decision (an approval); no engine needs to run it', live: false }
  if (activities.has('unowned')) return { text: '○ connected: a turn is unfinished and no engine runs it (the next engine on this database resumes it)', live: false }
  return { text: '● connected', live: false }
}
