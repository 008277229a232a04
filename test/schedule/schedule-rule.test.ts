/**
 * When a schedule's occurrences fall (src/schedule/schedule-rule.ts): a cron expression in a
 * time zone lands on the wall-clock time a person there reads, across a daylight saving change;
 * a late schedule fires as its `catchUp` says and counts the rest as missed.
 */
import { occurrenceAfter, planOccurrences, ruleOf } from '../../src/schedule/schedule-rule'

/** The wall-clock time of `ms` in `timeZone`, as a person there reads it. */
const wallClock = (ms: number, timeZone: string) =>
  new Intl.DateTimeFormat('en-GB', { timeZone, weekday: 'short', day: '2-digit', month: 'short', hour: '2-digit', minute: '2-digit', hour12: false }).format(ms)

test('a cron schedule in Europe/Berlin is at 9:00 there on each side of the spring change (an hour apart in UTC)', () => {
  const timezone = 'Europe/Berlin'
  const { next, rule } = ruleOf({ cron: '0 9 * * *', timezone }, Date.parse('2026-03-28T06:00:00Z'))
  expect(new Date(next).toISOString()).toBe('2026-03-28T08:00:00.000Z') // CET, UTC+1
  const after = occurrenceAfter(rule, next)!
  expect(new Date(after).toISOString()).toBe('2026-03-29T07:00:00.000Z') // CEST, UTC+2: the clocks went forward that night
  expect([next, after].map((ms) => wallClock(ms, timezone))).toEqual(['Sat 28 Mar, 09:00', 'Sun 29 Mar, 09:00'])
  expect(after - next).toBe(23 * 3_600_000)
})

test('a cron schedule in America/New_York at 1:30 on the autumn change falls once, at the first 1:30', () => {
  const timezone = 'America/New_York'
  const { next, rule } = ruleOf({ cron: '30 1 * * *', timezone }, Date.parse('2026-10-31T12:00:00Z'))
  const [first, second] = [next, occurrenceAfter(rule, next)!]
  expect(new Date(first).toISOString()).toBe('2026-11-01T05:30:00.000Z') // EDT, UTC-4 (1:30 comes twice that night)
  expect(new Date(second).toISOString()).toBe('2026-11-02T06:30:00.000Z') // EST, UTC-5
  expect([first, second].map((ms) => wallClock(ms, timezone))).toEqual(['Sun 01 Nov, 01:30', 'Mon 02 Nov, 01:30'])
})

test('a late schedule: latest fires the last missed occurrence, none fires nothing late, a window fires what is within it', () => {
  const every = { every: 1000, from: 0 }
  expect(planOccurrences({ rule: every, catchUp: 'latest' }, 0, 3_500)).toEqual({ fire: 3000, missed: 3, next: 4000 })
  expect(planOccurrences({ rule: { every: 10_000, from: 0 }, catchUp: 'none' }, 0, 33_000)).toEqual({ fire: null, missed: 4, next: 40_000 }) // 3 s late
  expect(planOccurrences({ rule: every, catchUp: 'none' }, 0, 3_010)).toEqual({ fire: 3000, missed: 3, next: 4000 }) // on time
  expect(planOccurrences({ rule: every, catchUp: 600 }, 0, 3_500)).toEqual({ fire: 3000, missed: 3, next: 4000 })
  expect(planOccurrences({ rule: every, catchUp: 400 }, 0, 3_500)).toEqual({ fire: null, missed: 4, next: 4000 })
  expect(planOccurrences({ rule: { at: 100 }, catchUp: 'latest' }, 100, 5_000)).toEqual({ fire: 100, missed: 0, next: null })
  // A day of a one-second interval missed: counted, not walked.
  expect(planOccurrences({ rule: every, catchUp: 'latest' }, 0, 86_400_500)).toEqual({ fire: 86_400_000, missed: 86_400, next: 86_401_000 })
})

test('every starts from at when given, else an interval from now', () => {
  expect(ruleOf({ every: 500 }, 1_000)).toEqual({ rule: { every: 500, from: 1_500 }, catchUp: 'latest', next: 1_500 })
  expect(ruleOf({ every: 500, at: new Date(10_000), catchUp: 'none' }, 1_000)).toEqual({ rule: { every: 500, from: 10_000 }, catchUp: 'none', next: 10_000 })
})
