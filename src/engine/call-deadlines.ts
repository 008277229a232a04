/**
 * Stored deadlines of waiting tool calls, settled by whichever engine sweeps.
 *
 * The mechanism, generic over what waits: a state tagged `call-wait` in the chart stores the
 * earliest deadline of its waiting calls in the context (`callDeadline`) and so on the turn row
 * (`retry_at`, src/turn/turn-log/log-rows.ts `retryAtOf`). A sweep (`sweepCallDeadlines`, run by
 * every `engine.recover()`: on open, each `recovery.intervalMs`, and on a timer armed for the
 * nearest deadline this engine heard of) reads the open turns whose deadline passed; a turn this
 * engine runs settles its expired calls (`RunningTurn.expireCalls(now)`, which decides what
 * expiry means for each waiting part: a deferred call becomes an error the model sees); a turn
 * whose engine is gone was taken over by the recovery that ran just before; a turn another live
 * engine runs is left to that engine's sweep. No in-memory timer is the only record: a turn that
 * no engine holds (parked, or its engine dead) is found by the next sweep.
 *
 * To reuse it for another wait (an approval's deadline): tag the state `call-wait`, keep its
 * earliest deadline in `callDeadline`, and handle the parts it waits on in `expireCalls`.
 */
import { callWaitStates } from '../../machines/turn.machine'
import type { TurnchartEvent } from '../core/bus'
import type { Store } from '../store/store'
import type { RunningTurns } from './running-turns'

/**
 * Settles the expired waiting calls of the open turns this engine runs; resolves with how many
 * calls it settled.
 *
 * @example
 * await sweepCallDeadlines({ store, running }, Date.now())
 */
export async function sweepCallDeadlines(deps: { store: Pick<Store, 'turns'>; running: RunningTurns }, now: number): Promise<number> {
  let settled = 0
  for (const record of await deps.store.turns.open()) {
    if (!callWaitStates.has(record.state) || record.retryAt === null || record.retryAt === undefined || record.retryAt > now) continue
    const turn = deps.running.find(record.id)
    if (turn) settled += await turn.expireCalls(now).catch(() => 0)
  }
  return settled
}

/**
 * A timer for the nearest deadline this engine's turns announced (`calls.waiting` events), so
 * that a deadline is settled when it passes rather than at the next recovery interval; the
 * stored deadline stays the record (a lost timer costs one interval). Returns the stop.
 *
 * @example
 * const stop = deadlineTimer((listener) => bus.subscribe(listener), () => void recover())
 */
export function deadlineTimer(subscribe: (listener: (event: TurnchartEvent) => void) => () => void, sweep: () => void): () => void {
  let timer: NodeJS.Timeout | undefined
  let next = Infinity
  const unsubscribe = subscribe((event) => {
    if (event.type !== 'calls.waiting') return
    const deadline = Math.min(...event.calls.map((call) => call.deadline ?? Infinity))
    if (!Number.isFinite(deadline) || deadline >= next) return
    next = deadline
    clearTimeout(timer)
    timer = setTimeout(() => {
      next = Infinity
      sweep()
    }, Math.max(0, deadline - Date.now()) + 5)
    timer.unref()
  })
  return () => {
    clearTimeout(timer)
    unsubscribe()
  }
}
