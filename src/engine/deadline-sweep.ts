/**
 * Stored deadlines of waiting turns, settled by whichever engine sweeps: a deferred call's
 * (`defer({ timeoutMs })`: an error the model sees), an approval's (`approvalTimeoutMs`: the
 * call is expired, its receipt `expired`, and the model sees a denial) and a throttled turn's
 * (its step asks the model's rate limit again).
 *
 * A waiting state's row (`waitOf`, the chart's `meta.wait`) keeps the earliest deadline of what
 * it waits on (`retry_at`, planned by src/turn/turn-log/row-plan.ts); each waiting part keeps
 * its own. One sweep (`sweepDeadlines`, run by every
 * `engine.recover()`: on open, each `recovery.intervalMs`, and on a timer armed for the nearest
 * deadline this engine heard of) reads the turns that are due with one query of the open turns'
 * index (`store.turns.due`): a turn this engine runs settles its own expired parts; a parked turn
 * (held by no engine) is taken here to settle them; a turn whose engine is gone was taken over by
 * the recovery that ran just before; a turn another live engine runs is left to that engine's
 * sweep. No in-memory timer is the only record.
 */
import { waitingStates, waitOf } from '../../machines/turn.machine'
import type { TurnchartEvent } from '../core/bus'
import { parkedOwner } from '../core/parking'
import { maxTimerMs } from '../core/timer-limit'
import type { Store } from '../store/store'
import type { ParkedTurns } from './parked-turns'
import type { RunningTurns } from './running-turns'


/**
 * Settles the expired waits of the due turns this engine runs or that are parked; resolves with
 * how many turns it settled.
 *
 * @example
 * await sweepDeadlines({ store, running, parked }, Date.now())
 */
export async function sweepDeadlines(deps: { store: Pick<Store, 'turns'>; running: RunningTurns; parked: Pick<ParkedTurns, 'settle'> }, now: number): Promise<number> {
  let settled = 0
  for (const record of await deps.store.turns.due(now)) {
    // A retry's delay is kept in the same column: the turn's own timer waits it out.
    if (!waitOf(record.state)) continue
    const here = deps.running.find(record.id)
    if (here) {
      await here.expire(now).catch(() => undefined)
      settled++
    } else if (record.owner === parkedOwner) {
      await deps.parked.settle(record.id, async (turn) => void (await turn.expire(now))).catch(() => undefined)
      settled++
    }
  }
  return settled
}

/** The engine's one timer for the nearest deadline: `arm` it for a deadline (the earliest wins); `stop` it at close. */
export interface DeadlineTimer {
  arm(deadline: number): void
  stop(): void
}

/**
 * The engine's one timer for the nearest deadline: those its turns announce (`calls.waiting`,
 * `approval.requested` and `turn.throttled` events: a deferred call's deadline, an approval's
 * expiry, a sleep's end, a rate limit's time),
 * the schedules' next occurrences (`schedule.updated`)
 * and those it is armed for (the earliest stored deadline of the waiting turns, parked ones
 * included, read after each sweep), so that a deadline is settled when it passes rather than at
 * the next recovery interval. One timer, not one per turn: a parked turn holds none. The stored
 * deadline stays the record (a lost timer costs one interval).
 *
 * @example
 * const timer = deadlineTimer((listener) => bus.subscribe(listener), () => void recover())
 */
export function deadlineTimer(subscribe: (listener: (event: TurnchartEvent) => void) => () => void, sweep: () => void): DeadlineTimer {
  let timer: NodeJS.Timeout | undefined
  let next = Infinity
  // A deadline further than a Node timer can hold (a sleep of weeks) is reached in steps.
  const start = () => {
    clearTimeout(timer)
    timer = setTimeout(() => {
      if (Date.now() < next) return start()
      next = Infinity
      sweep()
    }, Math.min(maxTimerMs, Math.max(0, next - Date.now()) + 5))
    timer.unref()
  }
  const arm = (deadline: number) => {
    if (!Number.isFinite(deadline) || deadline >= next) return
    next = deadline
    start()
  }
  const unsubscribe = subscribe((event) => {
    if (event.type === 'calls.waiting') arm(Math.min(...event.calls.map((call) => call.deadline ?? Infinity)))
    else if (event.type === 'approval.requested') arm(Math.min(...event.calls.map((call) => call.expiresAt ?? Infinity)))
    else if (event.type === 'turn.throttled') arm(event.until)
    else if (event.type === 'schedule.updated' && event.next !== null) arm(event.next)
  })
  return {
    arm,
    stop() {
      clearTimeout(timer)
      unsubscribe()
    },
  }
}

/**
 * The earliest stored deadline after `now` of the turns in a waiting state (the chart's
 * `meta.wait`), parked or held, when the store can say (`nextDeadline`), and of the schedules'
 * next occurrences; undefined when there is none.
 */
export async function nextWaitDeadline(store: Pick<Store, 'turns' | 'schedules'>, now: number): Promise<number | undefined> {
  const next = await store.turns.nextDeadline?.([...waitingStates().keys()], now)
  const due = await store.schedules?.nextDue()
  // (a schedule still due after the sweep failed to fire, or came due during it: tried again within a second, not in a loop)
  const schedule = due === undefined ? Infinity : due <= now ? now + scheduleRetryMs : due
  const earliest = Math.min(next ?? Infinity, schedule)
  return Number.isFinite(earliest) ? earliest : undefined
}

/** How soon a sweep is run again for a schedule it left due. */
const scheduleRetryMs = 1_000
