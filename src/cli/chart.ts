/**
 * `turnchart chart [--json]`: the turn chart as Mermaid (`stateDiagram-v2`), or with `--json`
 * as the machine's definition (`turnMachine.toJSON()`), which the Stately editor imports.
 */
import { turnMachine } from '../../machines/turn.machine'
import { toMermaid } from '../chart/chart-edges'
import { parseArgs } from './args'
import type { CliIO } from './io'

export async function chartCommand(argv: string[], io: CliIO): Promise<number> {
  const { flags } = parseArgs(argv, { flags: ['json'], positionals: 0 })
  io.stdout.write(flags.has('json') ? `${JSON.stringify(turnMachine.toJSON(), null, 2)}\n` : `${toMermaid(turnMachine)}\n`)
  return 0
}
