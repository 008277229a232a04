/**
 * `turnchart replay <db> <turn> [--json]`: the timeline of a turn, each step recomputed by the
 * chart's pure `transition()` from the stored log (a log the chart would not have taken is
 * reported with the row where it disagrees). Read-only.
 */
import type { TransitionRecord } from '../core/types'
import { replayTurn } from '../viewer/read-views'
import { parseArgs } from './args'
import { CliError, colors, formatTransition, json, openForReading, printable, truncate, type CliIO } from './io'

export async function replayCommand(argv: string[], io: CliIO): Promise<number> {
  const { positionals, flags } = parseArgs(argv, { flags: ['json'], positionals: ['db', 'turn'] })
  const [database, turnId] = positionals
  const store = await openForReading(database)
  const c = colors(io)
  const out = (line: string) => io.stdout.write(`${line}\n`)
  try {
    const replay = await store.read((s) => replayTurn(s, turnId))
    if (!replay) throw new CliError(`no turn ${turnId} in ${database}`)
    if (flags.has('json')) {
      out(JSON.stringify(replay, null, 2))
      return 0
    }
    const { turn, transitions, steps } = replay
    out(c.bold(`turn ${turn.id} (session ${turn.sessionId}): ${turn.outcome ?? `unfinished (${turn.state})`}`))
    const start = transitions[0]?.time ?? 0
    if (replay.pruned) out(c.yellow(`the transition log of this turn was pruned (turnchart prune); its messages and parts remain: turnchart show ${database} ${turn.sessionId}`))
    else if (steps) out(c.dim(`${steps.length} transitions replayed through the chart`))
    else out(c.red(`the log does not replay through the chart: ${replay.mismatch}`))
    for (const t of transitions) {
      const written = t.parts?.length ? c.dim(`  ${t.parts.length} part(s) written`) : ''
      out(formatEntry(t, c, start) + written)
    }
    if (turn.error) out(c.red(printable(`${turn.error.name}: ${turn.error.message}`)))
    return 0
  } finally {
    await store.close()
  }
}

function formatEntry(t: TransitionRecord, c: ReturnType<typeof colors>, start: number): string {
  const seq = String(t.seq).padStart(3)
  const at = c.dim(`+${String(t.time - start).padStart(5)} ms`)
  const payload = Object.keys(t.payload).length ? c.dim(`  ${truncate(json(t.payload), 100)}`) : ''
  return `${seq} ${at}  ${formatTransition(t, c)}${payload}`
}
