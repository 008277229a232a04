/**
 * The CLI's two commands that write to a database (the others only read it):
 * `recover <db>` ends, as aborted, the unfinished turns of processes that died (the CLI has
 * neither the app's model nor its tools, so it cannot resume them: let the app's next
 * `createEngine` do that instead when it should continue them); `prune <db> --older-than <age>`
 * deletes the transition logs of turns that ended before then (messages and parts stay).
 */
import { createEngine } from '../engine/create-engine'
import { parseArgs, UsageError } from './args'
import { openForReading, type CliIO } from './io'
import { noModel } from './no-model'
import { closeOnSignal, onTerminationSignals } from './signals'

/** Refuses a missing database or one that is not turnchart's before an engine would create or migrate it. */
async function requireDatabase(database: string): Promise<void> {
  await (await openForReading(database)).close()
}

export async function recoverCommand(argv: string[], io: CliIO): Promise<number> {
  const { positionals, flags } = parseArgs(argv, { flags: ['json'], positionals: ['db'] })
  await requireDatabase(positionals[0])
  const engine = await createEngine({ database: positionals[0], model: noModel('recover'), recovery: { policy: 'abort', onOpen: false, intervalMs: 0 } })
  const guard = onTerminationSignals((signal) => engine.close(closeOnSignal(signal)), (line) => io.stderr.write(line))
  try {
    const turns = await engine.recover()
    const results = await Promise.all(turns.map(async (turn) => ({ id: turn.id, sessionId: turn.sessionId, outcome: (await turn.done).outcome })))
    if (flags.has('json')) io.stdout.write(`${JSON.stringify(results, null, 2)}\n`)
    else if (results.length === 0) io.stdout.write('no turn to recover\n')
    else for (const r of results) io.stdout.write(`turn ${r.id} (session ${r.sessionId}): ${r.outcome}\n`)
    return 0
  } finally {
    guard.dispose()
    await engine.close()
  }
}

const units: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }

/** `30d`, `12h`, `90m`, `45s`, `500ms` → milliseconds. */
function parseAge(text: string): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/.exec(text.trim())
  if (!match) throw new UsageError(`--older-than must be an age such as 30d, 12h or 90m, not ${text}`)
  return Number(match[1]) * units[match[2]]
}

export async function pruneCommand(argv: string[], io: CliIO): Promise<number> {
  const { positionals, flags, values } = parseArgs(argv, { flags: ['json'], values: ['older-than'], positionals: ['db'] })
  const age = values.get('older-than')
  if (age === undefined) throw new UsageError('missing option --older-than <age>')
  const before = Date.now() - parseAge(age)
  await requireDatabase(positionals[0])
  const engine = await createEngine({ database: positionals[0], model: noModel('prune'), recovery: { onOpen: false, intervalMs: 0 } })
  try {
    const deleted = await engine.prune({ olderThan: before })
    const endedBefore = new Date(before).toISOString()
    if (flags.has('json')) io.stdout.write(`${JSON.stringify({ deleted, endedBefore }, null, 2)}\n`)
    else io.stdout.write(`deleted ${deleted} transition rows of turns ended before ${endedBefore}\n`)
    return 0
  } finally {
    await engine.close()
  }
}
