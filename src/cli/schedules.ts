/**
 * `turnchart schedules <db> [--session <id>] [--json]`: the schedules of a database (or of one
 * session), oldest first: when each fires next, what it fired last, what it missed. Read-only.
 */
import type { ScheduleRecord } from '../store/store'
import { ruleText } from '../schedule/schedule-rule'
import { parseArgs } from './args'
import { colors, openForReading, printable, truncate, type CliIO } from './io'

export async function schedulesCommand(argv: string[], io: CliIO): Promise<number> {
  const { positionals, flags, values } = parseArgs(argv, { flags: ['json'], values: ['session'], positionals: ['db'] })
  const store = await openForReading(positionals[0])
  const c = colors(io)
  try {
    const schedules = await store.read(async (read) => (await read.schedules?.list(values.get('session'))) ?? [])
    if (flags.has('json')) {
      io.stdout.write(`${JSON.stringify(schedules, null, 2)}\n`)
      return 0
    }
    if (schedules.length === 0) io.stdout.write('no schedules\n')
    for (const schedule of schedules) io.stdout.write(`${describeSchedule(schedule, c.bold)}\n`)
    return 0
  } finally {
    await store.close()
  }
}

/** One line: id, session, rule, next, last, missed, paused, and the prompt's start. */
export function describeSchedule(schedule: ScheduleRecord, bold: (text: string) => string = (text) => text): string {
  const text = schedule.input.flatMap((part) => (part.type === 'text' ? [part.text] : [])).join(' ')
  return [
    bold(schedule.id),
    schedule.sessionId,
    printable(ruleText(schedule.rule)),
    schedule.paused ? 'paused' : `next ${schedule.next === null ? 'none' : iso(schedule.next)}`,
    ...(schedule.last !== null ? [`last ${iso(schedule.last)} (${schedule.lastTurnId})`] : []),
    ...(schedule.missed > 0 ? [`missed ${schedule.missed}`] : []),
    printable(truncate(text, 60)),
  ].join('  ')
}

const iso = (ms: number) => new Date(ms).toISOString()
