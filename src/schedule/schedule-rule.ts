/**
 * When a schedule's occurrences fall, and what a late one does: the rule made from
 * `engine.schedule`'s options (checked), the occurrence after a time (a cron expression read by
 * croner, in its IANA time zone, daylight saving included), and, for a schedule found due, which
 * occurrence it fires, how many it missed and where it goes next. Pure: no clock, no store.
 */
import { Cron } from 'croner'
import { InvalidArgumentError } from '../core/errors'
import type { CatchUp, ScheduleRule } from '../store/store'

/** The shortest `every` (ms): each occurrence is a turn. */
export const minEveryMs = 100

/** How late an occurrence may be and still be on time (`catchUp: 'none'` fires it): a sweep's lateness, not an outage's. */
export const onTimeMs = 2_000

/** Past this many occurrences a late cron schedule's missed ones are counted no further (the latest fired is then the last one counted). */
const maxCounted = 10_000

/** What `engine.schedule` takes to say when (exactly one of `at`, `every` and `cron`; `at` may start an `every`). */
export interface ScheduleTimes {
  at?: Date | number
  every?: number
  cron?: string
  timezone?: string
  catchUp?: CatchUp
}

/**
 * The rule of `times`, its catch-up and its first occurrence; throws `InvalidArgumentError`
 * naming the field.
 *
 * @example
 * ruleOf({ cron: '0 9 * * 1', timezone: 'Europe/Berlin' }, Date.now()) // { rule, catchUp: 'latest', next: <next Monday 9:00 in Berlin> }
 */
export function ruleOf(times: ScheduleTimes, now: number): { rule: ScheduleRule; catchUp: CatchUp; next: number } {
  const given = (['at', 'every', 'cron'] as const).filter((key) => times[key] !== undefined)
  if (given.length === 0) throw new InvalidArgumentError('at', undefined, 'one of at, every or cron')
  if (times.cron !== undefined && given.length > 1) throw new InvalidArgumentError(given.find((key) => key !== 'cron')!, times[given.find((key) => key !== 'cron')!], 'not with cron')
  if (times.timezone !== undefined && times.cron === undefined) throw new InvalidArgumentError('timezone', times.timezone, 'only with cron')
  const catchUp = catchUpOf(times.catchUp)
  const at = times.at === undefined ? undefined : timeOf(times.at)
  if (times.every !== undefined) {
    const every = times.every
    if (typeof every !== 'number' || !Number.isInteger(every) || every < minEveryMs) throw new InvalidArgumentError('every', every, `a whole number of milliseconds, ${minEveryMs} or more`)
    const next = at ?? now + every
    return { rule: { every, from: next }, catchUp, next }
  }
  if (at !== undefined) return { rule: { at }, catchUp, next: at }
  const rule = { cron: cronOf(times.cron), timezone: timezoneOf(times.timezone ?? 'UTC') }
  const next = occurrenceAfter(rule, now)
  if (next === null) throw new InvalidArgumentError('cron', times.cron, 'an expression with an occurrence to come')
  return { rule, catchUp, next }
}

/** The rule's first occurrence after `time` (strictly); null when it has none (a one-time schedule). */
export function occurrenceAfter(rule: ScheduleRule, time: number): number | null {
  if ('at' in rule) return rule.at > time ? rule.at : null
  if ('every' in rule) return time < rule.from ? rule.from : rule.from + (Math.floor((time - rule.from) / rule.every) + 1) * rule.every
  return new Cron(rule.cron, { timezone: rule.timezone }).nextRun(new Date(time))?.getTime() ?? null
}

/** A rule in words, as the CLI and the viewer list it: `at 2031-01-06T08:00:00.000Z`, `every 500 ms`, `cron '0 9 * * 1' Europe/Berlin`. */
export function ruleText(rule: ScheduleRule): string {
  return 'at' in rule ? `at ${new Date(rule.at).toISOString()}` : 'every' in rule ? `every ${rule.every} ms` : `cron '${rule.cron}' ${rule.timezone}`
}

/** What a due schedule does now: the occurrence it fires (null: none), the ones it missed, its next. */
export interface OccurrencePlan {
  fire: number | null
  missed: number
  next: number | null
}

/**
 * For a schedule whose next occurrence (`due`) is at or before `now`: the occurrences passed
 * since (its engines were down), the latest fired as `catchUp` says, the others missed.
 *
 * @example
 * planOccurrences({ rule: { every: 1000, from: 0 }, catchUp: 'latest' }, 0, 3_500) // { fire: 3000, missed: 3, next: 4000 }
 */
export function planOccurrences(schedule: { rule: ScheduleRule; catchUp: CatchUp }, due: number, now: number): OccurrencePlan {
  const { latest, passed } = passedSince(schedule.rule, due, now)
  const late = now - latest
  const { catchUp } = schedule
  const fires = catchUp === 'latest' || late <= (catchUp === 'none' ? onTimeMs : catchUp)
  return { fire: fires ? latest : null, missed: passed - (fires ? 1 : 0), next: occurrenceAfter(schedule.rule, Math.max(latest, now)) }
}

/** The occurrences from `due` to `now`: how many, and the latest (an interval's counted, a cron's walked up to `maxCounted`). */
function passedSince(rule: ScheduleRule, due: number, now: number): { latest: number; passed: number } {
  if ('every' in rule) {
    const passed = Math.floor((now - due) / rule.every) + 1
    return { latest: due + (passed - 1) * rule.every, passed }
  }
  let latest = due
  let passed = 1
  for (let next = occurrenceAfter(rule, latest); next !== null && next <= now && passed < maxCounted; next = occurrenceAfter(rule, latest)) {
    latest = next
    passed++
  }
  return { latest, passed }
}

function catchUpOf(value: unknown): CatchUp {
  if (value === undefined) return 'latest'
  if (value === 'latest' || value === 'none') return value
  if (typeof value === 'number' && Number.isFinite(value) && value >= 0) return value
  throw new InvalidArgumentError('catchUp', value, "'latest', 'none' or a number of milliseconds, 0 or more")
}

function timeOf(value: unknown): number {
  const time = value instanceof Date ? value.getTime() : value
  if (typeof time !== 'number' || !Number.isFinite(time)) throw new InvalidArgumentError('at', value, 'a Date or epoch milliseconds')
  return time
}

function cronOf(value: unknown): string {
  if (typeof value !== 'string') throw new InvalidArgumentError('cron', value, 'a cron expression (5 or 6 fields)')
  try {
    new Cron(value)
  } catch (error) {
    throw new InvalidArgumentError('cron', value, `a cron expression that parses (${(error as Error).message})`)
  }
  return value
}

function timezoneOf(value: unknown): string {
  try {
    if (typeof value !== 'string') throw new TypeError('not a string')
    new Intl.DateTimeFormat('en', { timeZone: value })
    return value
  } catch {
    throw new InvalidArgumentError('timezone', value, "an IANA time zone (e.g. 'Europe/Berlin')")
  }
}
