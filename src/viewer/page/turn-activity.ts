/**
 * What an unfinished turn is doing, as the page says it: an engine runs it (its owner holds a
 * lease that has not run out), it waits on a person or the world (a waiting state, such as
 * awaiting approval, held by an engine or parked: nobody needs to run it; the server says so in
 * `waitingFor`, read from the chart), or nobody runs it (released by a closed engine, or its
 * process died): it is not live, and the next engine on the database resumes it. A DOM-free
 * module: the page and the tests share it.
 */
import { parkedOwner } from '../../core/parking'
import type { TurnView } from '../wire'

export type TurnActivity = 'ended' | 'running' | 'waiting' | 'unowned'

/** What the page knows of a turn's activity. */
type TurnFacts = Pick<TurnView, 'outcome' | 'state' | 'owner' | 'leaseUntil' | 'waitingFor'>

/**
 * @example
 * turnActivity({ outcome: null, state: 'retry-waiting', owner: null, leaseUntil: null }, Date.now()) // 'unowned'
 */
export function turnActivity(turn: TurnFacts, now: number): TurnActivity {
  if (turn.outcome !== null) return 'ended'
  if (turn.waitingFor !== undefined || turn.owner === parkedOwner) return 'waiting'
  return turn.owner != null && turn.leaseUntil != null && turn.leaseUntil > now ? 'running' : 'unowned'
}

/** The page's status line for a session's turns (connected). */
export function activityStatus(turns: TurnFacts[], now: number): { text: string; live: boolean } {
  const activities = new Set(turns.map((turn) => turnActivity(turn, now)))
  if (activities.has('running')) return { text: '● live: a turn is running', live: true }
  // A waiting turn is not live: nothing runs until someone settles it (it may be parked, held by no engine).
  const waiting = turns.find((turn) => turnActivity(turn, now) === 'waiting')
  if (waiting) return { text: `◐ waiting: a turn waits for ${waiting.waitingFor ?? 'a person or the world'}; no engine needs to run it`, live: false }
  if (activities.has('unowned')) return { text: '○ connected: a turn is unfinished and no engine runs it (the next engine on this database resumes it)', live: false }
  return { text: '● connected', live: false }
}
