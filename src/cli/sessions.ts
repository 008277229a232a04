/** `turnchart sessions <db>`: the sessions of a database, oldest first, with their turns. */
import { parseArgs } from './args'
import { colors, openExisting, type CliIO } from './io'

export async function sessionsCommand(argv: string[], io: CliIO): Promise<number> {
  const { positionals } = parseArgs(argv, { positionals: 1 })
  const engine = await openExisting(positionals[0])
  const c = colors(io)
  try {
    const sessions = await engine.listSessions()
    if (sessions.length === 0) io.stdout.write('no sessions\n')
    for (const session of sessions) {
      const messages = await engine.messages(session.id)
      const turns = [...new Set(messages.map((m) => m.info.turnId).filter((id): id is string => Boolean(id)))]
      const outcomes = await Promise.all(turns.map(async (id) => (await engine.getTurn(id))?.outcome ?? 'running'))
      const created = new Date(session.time.created).toISOString()
      io.stdout.write(
        `${c.bold(session.id)}  ${created}  ${messages.length} messages  ${turns.length} turns` +
          `${outcomes.length ? ` (${outcomes.join(', ')})` : ''}${session.title ? `  ${session.title}` : ''}\n`,
      )
    }
    return 0
  } finally {
    await engine.close()
  }
}
