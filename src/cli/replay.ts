/**
 * `turnchart replay <db> <turn>`: the timeline of a turn. Uses `engine.replay(turnId)` when
 * the engine has it; otherwise prints the persisted transition log.
 */
import type { Engine } from '../engine'
import type { TransitionRecord } from '../types'
import { parseArgs } from './args'
import { CliError, colors, formatTransition, json, openExisting, truncate, type CliIO } from './io'

/** `engine.replay` where the engine has it (structural, so this file builds without it). */
type MaybeReplay = Engine & { replay?: (turnId: string) => Promise<unknown> | unknown }
interface ReplayStepLike {
  seq: number
  state: string
  event: string
  time: number
  parts?: string[]
}

export async function replayCommand(argv: string[], io: CliIO): Promise<number> {
  const { positionals } = parseArgs(argv, { positionals: 2 })
  const [database, turnId] = positionals
  const engine: MaybeReplay = await openExisting(database)
  const c = colors(io)
  const out = (line: string) => io.stdout.write(`${line}\n`)
  try {
    const turn = await engine.getTurn(turnId)
    if (!turn) throw new CliError(`no turn ${turnId} in ${database}`)
    out(c.bold(`turn ${turn.id} (session ${turn.sessionId}): ${turn.outcome ?? `running (${turn.state})`}`))
    const transitions = await engine.transitions(turnId)
    const start = transitions[0]?.time ?? 0
    if (typeof engine.replay === 'function') {
      // Each step recomputed by the chart's pure transition() from the log (it throws on a
      // log the chart would not have taken); payloads come from the log itself.
      const timeline = await engine.replay(turnId)
      const steps = Array.isArray(timeline) ? (timeline as ReplayStepLike[]) : []
      out(c.dim(`${steps.length} transitions replayed through the chart`))
      let from = 'idle'
      for (const step of steps) {
        const logged = transitions.find((t) => t.seq === step.seq)
        const parts = Array.isArray(step.parts) && step.parts.length ? c.dim(`  ${step.parts.length} part(s) written`) : ''
        out(formatEntry({ seq: step.seq, from, to: step.state, event: step.event, time: step.time, payload: logged?.payload ?? {} }, c, start) + parts)
        from = step.state
      }
    } else {
      for (const t of transitions) out(formatEntry(t, c, start))
    }
    if (turn.error) out(c.red(`${turn.error.name}: ${turn.error.message}`))
    return 0
  } finally {
    await engine.close()
  }
}

function formatEntry(entry: Partial<TransitionRecord>, c: ReturnType<typeof colors>, start?: number): string {
  const t = entry
  const seq = typeof t.seq === 'number' ? String(t.seq).padStart(3) : '   '
  const at = typeof t.time === 'number' && start !== undefined ? c.dim(`+${String(t.time - start).padStart(5)} ms`) : ''
  const payload = t.payload && Object.keys(t.payload).length ? c.dim(`  ${truncate(json(t.payload), 100)}`) : ''
  return `${seq} ${at}  ${formatTransition(t as TransitionRecord, c)}${payload}`
}
