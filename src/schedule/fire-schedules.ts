/**
 * Schedules fired by whichever engine sweeps when they are due. Each occurrence is claimed in
 * the transaction that queues its turn (a queued prompt whose id is the turn's): of engines that
 * reach it together one claims it, and a crash before the commit leaves both undone, so the
 * occurrence is fired again rather than never, and never twice. The queue then starts the turn,
 * here or on any engine, as any queued prompt (tenant slots included).
 */
import type { Bus } from '../core/bus'
import { SessionNotFoundError } from '../core/errors'
import { newId } from '../core/ids'
import type { ScheduleRecord, Store } from '../store/store'
import { planOccurrences } from './schedule-rule'

/**
 * Fires the schedules due at `now`: each one's occurrence claimed and its turn queued, the missed
 * ones counted; a schedule whose session is gone is deleted. Resolves with the sessions whose
 * queue got a turn (the caller starts them).
 *
 * @example
 * for (const sessionId of await fireSchedules({ store, bus }, Date.now())) void queue.drain(sessionId)
 */
export async function fireSchedules(deps: { store: Store; bus: Pick<Bus, 'publish'> }, now: number): Promise<string[]> {
  const schedules = deps.store.schedules
  if (!schedules) return []
  const queued: string[] = []
  for (const schedule of await schedules.due(now)) {
    const fired = await fireOne(deps.store, schedule, now).catch((error: unknown) => {
      if (SessionNotFoundError.isInstance(error)) void schedules.delete(schedule.id).catch(() => undefined)
      return undefined
    })
    if (!fired) continue
    const { sessionId, id: scheduleId } = schedule
    const { plan, turnId } = fired
    if (plan.missed > 0) deps.bus.publish({ type: 'schedule.missed', sessionId, scheduleId, missed: plan.missed, latest: plan.fire ?? schedule.next! })
    if (plan.fire !== null) {
      deps.bus.publish({ type: 'schedule.fired', sessionId, scheduleId, turnId, occurrence: plan.fire })
      queued.push(sessionId)
    }
    deps.bus.publish({ type: 'schedule.updated', sessionId, scheduleId, next: plan.next })
  }
  return queued
}

/** One due schedule's occurrence claimed, its turn queued in the same transaction; undefined when another engine claimed it. */
async function fireOne(store: Store, schedule: ScheduleRecord, now: number) {
  const plan = planOccurrences(schedule, schedule.next!, now)
  const turnId = newId('trn', now)
  const advance = plan.fire === null ? { last: schedule.last, lastTurnId: schedule.lastTurnId } : { last: plan.fire, lastTurnId: turnId }
  const claimed = await store.transaction(async (tx) => {
    if (!(await tx.schedules!.claim(schedule.id, schedule.next!, { ...advance, next: plan.next, missed: schedule.missed + plan.missed }))) return false
    if (plan.fire === null) return true
    if (!(await tx.sessions.lock(schedule.sessionId, now))) throw new SessionNotFoundError(schedule.sessionId)
    const occurrence = { id: schedule.id, occurrence: plan.fire }
    await tx.queue.insert({ id: turnId, sessionId: schedule.sessionId, input: schedule.input, options: schedule.options, time: { created: now }, schedule: occurrence })
    return true
  })
  return claimed ? { plan, turnId } : undefined
}
