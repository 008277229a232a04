/**
 * The engine's schedule calls: `schedule` stores a schedule that starts a turn on its session at
 * each occurrence (fired by whichever engine sweeps: src/schedule/fire-schedules.ts), and the
 * calls that list, pause, resume and delete schedules.
 */
import { requireId } from '../core/arguments'
import type { Bus } from '../core/bus'
import { InvalidArgumentError } from '../core/errors'
import { newId } from '../core/ids'
import type { PromptOptions } from '../core/types'
import type { ResolvedConfig } from '../config/resolved-config'
import { turnRequest } from '../conversation/turn-options'
import { userParts, type PromptInput } from '../conversation/user-input'
import { occurrenceAfter, ruleOf, type ScheduleTimes } from '../schedule/schedule-rule'
import type { CatchUp, ScheduleRecord, ScheduleStore, Store } from '../store/store'
import type { TurnServices } from '../turn/turn-config'
import type { EngineCall } from './engine-calls'

/** `engine.schedule`'s argument: what to send, to which session, and when. */
export interface ScheduleOptions extends ScheduleTimes {
  sessionId: string
  /** The prompt: text, or user message content (as `prompt` takes it). */
  input: PromptInput
  /** The turn's options, as `prompt`'s (model, tools, budget, settings); a busy session queues the turn (`whenBusy: 'enqueue'`, the only one). */
  options?: PromptOptions & { whenBusy?: 'enqueue' }
  /** Your id for it: the same id twice is one schedule. */
  id?: string
}

/** A schedule as `engine.schedules()` lists it. */
export interface Schedule {
  id: string
  sessionId: string
  /** The next occurrence (epoch ms); null when none is to come. */
  next: number | null
  /** The last occurrence fired, and the turn it started. */
  last?: number
  lastTurnId?: string
  /** Occurrences passed without a turn. */
  missed: number
  paused: boolean
  at?: number
  every?: number
  cron?: string
  timezone?: string
  catchUp: CatchUp
}

export interface ScheduleCalls {
  /**
   * Stores a schedule that starts a turn on `sessionId` with `input` at `at` (a Date or epoch
   * ms), every `every` ms (from `at`, or from now), or on a `cron` expression in `timezone`
   * (IANA, default UTC). Fired once per occurrence by whichever engine on the database is up; an
   * occurrence missed while every engine was down fires when one opens, as `catchUp` says
   * (`'latest'`, default: the last one only; `'none'`; or how late it may be, in ms). Resolves
   * with its id and first occurrence. Throws `InvalidArgumentError` naming the field (an unknown
   * session, a cron that does not parse, `every` under 100 ms, none or both of `at` and `cron`).
   */
  schedule(options: ScheduleOptions): Promise<{ id: string; next: number | null }>
  /** The schedules, oldest first: all, a session's, or a tenant's. */
  schedules(filter?: { sessionId?: string; tenant?: string }): Promise<Schedule[]>
  /** Deletes a schedule; false when there was none. Every engine stops firing it. */
  unschedule(id: string): Promise<boolean>
  /** Pauses a schedule: no occurrence fires until it is resumed. False when there was none. */
  pauseSchedule(id: string): Promise<boolean>
  /** Resumes a paused schedule from its next occurrence after now (the ones passed meanwhile are not fired). False when there was none. */
  resumeSchedule(id: string): Promise<boolean>
}

export interface ScheduleCallDeps {
  config: ResolvedConfig
  services: TurnServices
  store: Store
  bus: Pick<Bus, 'publish'>
  call: EngineCall
  /**
   * Whether this engine's sweep fires schedules: turnchart's own engines do; an engine a host runs
   * its turns on (turnchart/restate, turnchart/host) has no sweep, and refuses to store one that
   * nothing would fire.
   */
  fires: boolean
}

/**
 * @example
 * const engine = { ...scheduleCalls({ config, services, store, bus, call }), ... }
 */
export function scheduleCalls(deps: ScheduleCallDeps): ScheduleCalls {
  const { store, call } = deps
  const schedules = (operation: string): ScheduleStore => {
    if (!store.schedules) throw new InvalidArgumentError('database', 'a store without schedules', `a store that keeps schedules to ${operation}`)
    return store.schedules
  }
  const storable = (): ScheduleStore => {
    if (!deps.fires) throw new InvalidArgumentError('engine', 'an engine a host runs its turns on (it has no sweep)', "an engine of createEngine to store a schedule (its sweep fires the occurrences; a host's engine would store one nothing fires)")
    return schedules('store a schedule')
  }
  const updated = (record: ScheduleRecord) => deps.bus.publish({ type: 'schedule.updated', sessionId: record.sessionId, scheduleId: record.id, next: record.next })
  return {
    async schedule(options) {
      const record = scheduleRecord(deps, options, Date.now())
      const rows = storable()
      const stored = await call('store a schedule', async () => {
        if (!(await store.sessions.get(record.sessionId))) throw new InvalidArgumentError('sessionId', record.sessionId, 'the id of a stored session')
        return rows.insert(record)
      })
      updated(stored)
      return { id: stored.id, next: stored.next }
    },
    schedules: async (filter = {}) => {
      const listed = await call('list schedules', () => schedules('list schedules').list(filter.sessionId === undefined ? undefined : requireId('sessionId', filter.sessionId)))
      if (filter.tenant === undefined) return listed.map(scheduleOf)
      const sessions = await call('list schedules', () => Promise.all(listed.map((s) => store.sessions.get(s.sessionId))))
      return listed.filter((_, i) => sessions[i]?.tenant === filter.tenant).map(scheduleOf)
    },
    unschedule: (id) => call('delete a schedule', () => schedules('delete a schedule').delete(requireId('id', id))),
    pauseSchedule: (id) => setPaused(deps, schedules('pause a schedule'), requireId('id', id), true).then((record) => record !== undefined),
    async resumeSchedule(id) {
      const record = await setPaused(deps, schedules('resume a schedule'), requireId('id', id), false)
      if (record) updated(record)
      return record !== undefined
    },
  }
}

/** The record `options` make, checked (nothing is stored when a field is wrong). */
function scheduleRecord(deps: ScheduleCallDeps, options: ScheduleOptions, now: number): ScheduleRecord {
  if (typeof options !== 'object' || options === null) throw new InvalidArgumentError('options', options, 'an object like { sessionId, input, every }')
  const sessionId = requireId('sessionId', options.sessionId)
  const id = options.id === undefined ? newId('sch', now) : requireId('id', options.id)
  const input = userParts(options.input, deps.config.maxFileBytes)
  const { whenBusy = 'enqueue', ...turnOptions } = options.options ?? {}
  if (whenBusy !== 'enqueue') throw new InvalidArgumentError('options.whenBusy', whenBusy, "'enqueue' (a scheduled turn on a busy session waits for it)")
  for (const unstored of ['headers', 'stopWhen', 'output', 'abortSignal'] as const) {
    if (unstored in turnOptions) throw new InvalidArgumentError(`options.${unstored}`, (turnOptions as Record<string, unknown>)[unstored], 'nothing (a schedule stores its options; this one is never stored)')
  }
  // The options checked as a prompt's are (a model the engine does not have, a bad setting).
  turnRequest(deps.config, deps.services, sessionId, turnOptions)
  const { rule, catchUp, next } = ruleOf(options, now)
  return { id, sessionId, input, options: turnOptions, rule, catchUp, next, last: null, lastTurnId: null, missed: 0, paused: false, time: { created: now } }
}

/** Pauses or resumes a schedule; resumed, it goes on from its next occurrence after now (a one-time one not fired yet: at once). */
async function setPaused(deps: ScheduleCallDeps, schedules: ScheduleStore, id: string, paused: boolean): Promise<ScheduleRecord | undefined> {
  return deps.call(paused ? 'pause a schedule' : 'resume a schedule', async () => {
    const record = await schedules.get(id)
    if (!record) return undefined
    const now = Date.now()
    const next = paused || record.next === null ? record.next : 'at' in record.rule ? record.next : occurrenceAfter(record.rule, now)
    await schedules.setPaused(id, paused, next)
    return { ...record, paused, next }
  })
}

function scheduleOf(record: ScheduleRecord): Schedule {
  const { rule } = record
  return {
    id: record.id,
    sessionId: record.sessionId,
    next: record.next,
    ...(record.last !== null ? { last: record.last } : {}),
    ...(record.lastTurnId !== null ? { lastTurnId: record.lastTurnId } : {}),
    missed: record.missed,
    paused: record.paused,
    ...('at' in rule ? { at: rule.at } : 'every' in rule ? { every: rule.every } : { cron: rule.cron, timezone: rule.timezone }),
    catchUp: record.catchUp,
  }
}
