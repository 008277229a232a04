/**
 * `turnchart sessions <db> [--json]`: the sessions of a database, oldest first, with their
 * turns. Read-only: the database is neither migrated nor recovered.
 */
import { summarizeSessions } from '../viewer/read-views'
import { parseArgs } from './args'
import { colors, openForReading, printable, type CliIO } from './io'

export async function sessionsCommand(argv: string[], io: CliIO): Promise<number> {
  const { positionals, flags } = parseArgs(argv, { flags: ['json'], positionals: ['db'] })
  const store = await openForReading(positionals[0])
  const c = colors(io)
  try {
    const sessions = await store.read(summarizeSessions)
    if (flags.has('json')) {
      io.stdout.write(`${JSON.stringify(sessions, null, 2)}\n`)
      return 0
    }
    if (sessions.length === 0) io.stdout.write('no sessions\n')
    for (const session of sessions) {
      const outcomes = session.turns.map((t) => t.outcome ?? `unfinished (${t.state})`)
      const created = new Date(session.time.created).toISOString()
      io.stdout.write(
        `${c.bold(session.id)}  ${created}  ${session.messages} messages  ${session.turns.length} turns` +
          `${outcomes.length ? ` (${outcomes.join(', ')})` : ''}${session.title ? `  ${printable(session.title)}` : ''}\n`,
      )
    }
    return 0
  } finally {
    await store.close()
  }
}
