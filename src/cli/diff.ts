/**
 * `turnchart diff <db> <turnA> <turnB>`: two stored turns (two runs of one case: a turn and its
 * re-run kept with `rerun --out`, or two turns of a database) read as trajectories and printed
 * step by step side by side, the first difference marked. The database is only read.
 */
import { TurnNotFoundError } from '../core/errors'
import type { RecordingSource } from '../testing/recording-source'
import { readTrajectory } from '../testing/trajectory'
import { diffTrajectories, formatTrajectoryDiff, type TrajectoryField } from '../testing/trajectory-diff'
import { parseArgs, UsageError } from './args'
import { CliError, colors, openForReading, type CliIO } from './io'

const fields: readonly TrajectoryField[] = ['text', 'reasoning', 'toolCalls', 'toolInput', 'toolOutput', 'outcome', 'usage', 'states', 'steps']

export async function diffCommand(argv: string[], io: CliIO): Promise<number> {
  const { positionals, flags, values } = parseArgs(argv, { flags: ['json'], values: ['ignore'], positionals: ['db', 'turnA', 'turnB'] })
  const [database, turnA, turnB] = positionals
  const ignore = (values.get('ignore') ?? '').split(',').filter((f) => f !== '') as TrajectoryField[]
  const unknown = ignore.find((f) => !fields.includes(f))
  if (unknown) throw new UsageError(`--ignore takes fields of ${fields.join(', ')}; not ${unknown}`)
  const store = await openForReading(database)
  try {
    const source: RecordingSource = {
      getTurn: (id) => store.read((s) => s.turns.get(id)),
      transitions: (id) => store.read((s) => s.transitions.list(id)),
      messages: (id) => store.read((s) => s.messages.list(id)),
    }
    const read = async (turnId: string) => {
      try {
        return await readTrajectory(source, turnId)
      } catch (error) {
        if (TurnNotFoundError.isInstance(error)) throw new CliError(`no turn ${turnId} in ${database}`)
        throw error
      }
    }
    const [a, b] = [await read(turnA), await read(turnB)]
    const diff = diffTrajectories(a, b, { ignore })
    if (flags.has('json')) io.stdout.write(`${JSON.stringify({ a, b, diff }, null, 2)}\n`)
    else io.stdout.write(formatTrajectoryDiff(diff, { color: colors(io).bold('x') !== 'x' }))
    return 0
  } finally {
    await store.close()
  }
}
