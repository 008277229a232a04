/**
 * `turnchart show <db> <session> [--json]`: the conversation, message by message with its
 * parts, and for each turn its outcome and the states it went through. Read-only.
 */
import { viewSession } from '../viewer/read-views'
import { parseArgs } from './args'
import { CliError, colors, formatPart, openForReading, printable, type CliIO } from './io'

export async function showCommand(argv: string[], io: CliIO): Promise<number> {
  const { positionals, flags } = parseArgs(argv, { flags: ['json'], positionals: ['db', 'session'] })
  const [database, sessionId] = positionals
  const store = await openForReading(database)
  const c = colors(io)
  const out = (line = '') => io.stdout.write(`${line}\n`)
  try {
    const view = await store.read((s) => viewSession(s, sessionId))
    if (!view) throw new CliError(`no session ${sessionId} in ${database}`)
    if (flags.has('json')) {
      out(JSON.stringify(view, null, 2))
      return 0
    }
    const { session, messages } = view
    const turns = new Map(view.turns.map((t) => [t.id, t]))
    out(c.bold(`session ${session.id}${session.title ? `: ${printable(session.title)}` : ''}`))
    let lastTurn: string | undefined
    for (const { info, parts } of messages) {
      if (info.turnId && info.turnId !== lastTurn) {
        lastTurn = info.turnId
        const turn = turns.get(info.turnId)
        const states = (turn?.transitions ?? []).map((t) => t.to)
        // An ended turn with no log had it pruned (see TurnReplay.pruned).
        const path = turn?.outcome && states.length === 0 ? 'transition log pruned' : ['idle', ...states].join(' → ')
        out()
        out(c.cyan(`turn ${info.turnId}: ${turn?.outcome ?? `unfinished (${turn?.state ?? '?'})`}`) + c.dim(`  ${path}`))
        if (turn?.error) out(c.red(printable(`  ${turn.error.name}: ${turn.error.message}`)))
      }
      const role = info.summary ? 'summary' : info.role
      const usage = info.tokens ? c.dim(`  tokens in ${info.tokens.input} out ${info.tokens.output}`) : ''
      out(`${c.bold(role)} ${c.dim(info.id)}${info.finish ? c.dim(`  finish ${info.finish}`) : ''}${usage}`)
      for (const part of parts) {
        const text = formatPart(part, c)
        out(text.split('\n').map((line) => `  ${line}`).join('\n'))
      }
      if (info.error) out(c.red(printable(`  error ${info.error.name}: ${info.error.message}`)))
    }
    return 0
  } finally {
    await store.close()
  }
}
