/**
 * `turnchart sessions <db> [--json]`: the sessions of a database, oldest first, with their
 * turns. Read-only: the database is neither migrated nor recovered.
 */
import type { Repository } from '../store/repository'
import type { SessionInfo } from '../types'
import { parseArgs } from './args'
import { colors, openForReading, type CliIO } from './io'

export interface SessionSummary extends SessionInfo {
  messages: number
  turns: Array<{ id: string; state: string; outcome: string | null }>
}

/** Each session with its message count and its turns (state and outcome), oldest first. */
export async function summarizeSessions(repo: Repository): Promise<SessionSummary[]> {
  const out: SessionSummary[] = []
  for (const session of await repo.listSessions()) {
    const messages = await repo.messages(session.id)
    const turnIds = [...new Set(messages.map((m) => m.info.turnId).filter((id): id is string => Boolean(id)))]
    const turns = []
    for (const id of turnIds) {
      const turn = await repo.getTurn(id)
      turns.push({ id, state: turn?.state ?? 'unknown', outcome: turn?.outcome ?? null })
    }
    out.push({ ...session, messages: messages.length, turns })
  }
  return out
}

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
          `${outcomes.length ? ` (${outcomes.join(', ')})` : ''}${session.title ? `  ${session.title}` : ''}\n`,
      )
    }
    return 0
  } finally {
    await store.close()
  }
}
