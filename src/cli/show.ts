/**
 * `turnchart show <db> <session>`: the conversation, message by message with its parts, and
 * for each turn its outcome and the states it went through.
 */
import { parseArgs } from './args'
import { CliError, colors, formatPart, openExisting, type CliIO } from './io'

export async function showCommand(argv: string[], io: CliIO): Promise<number> {
  const { positionals } = parseArgs(argv, { positionals: 2 })
  const [database, sessionId] = positionals
  const engine = await openExisting(database)
  const c = colors(io)
  const out = (line = '') => io.stdout.write(`${line}\n`)
  try {
    const session = await engine.getSession(sessionId)
    if (!session) throw new CliError(`no session ${sessionId} in ${database}`)
    out(c.bold(`session ${session.id}${session.title ? `: ${session.title}` : ''}`))
    const messages = await engine.messages(sessionId)
    let lastTurn: string | undefined
    for (const { info, parts } of messages) {
      if (info.turnId && info.turnId !== lastTurn) {
        lastTurn = info.turnId
        const turn = await engine.getTurn(info.turnId)
        const states = (await engine.transitions(info.turnId)).map((t) => t.to)
        out()
        out(c.cyan(`turn ${info.turnId}: ${turn?.outcome ?? `running (${turn?.state ?? '?'})`}`) + c.dim(`  ${['idle', ...states].join(' → ')}`))
        if (turn?.error) out(c.red(`  ${turn.error.name}: ${turn.error.message}`))
      }
      const role = info.summary ? 'summary' : info.role
      const usage = info.tokens ? c.dim(`  tokens in ${info.tokens.input} out ${info.tokens.output}`) : ''
      out(`${c.bold(role)} ${c.dim(info.id)}${info.finish ? c.dim(`  finish ${info.finish}`) : ''}${usage}`)
      for (const part of parts) {
        const text = formatPart(part, c)
        out(text.split('\n').map((line) => `  ${line}`).join('\n'))
      }
      if (info.error) out(c.red(`  error ${info.error.name}: ${info.error.message}`))
    }
    return 0
  } finally {
    await engine.close()
  }
}
