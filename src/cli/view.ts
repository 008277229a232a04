/**
 * `turnchart view <db> [--port <n>]`: serves the offline viewer on 127.0.0.1 (read-only) until
 * Ctrl-C or SIGTERM.
 */
import { startViewer } from '../viewer/viewer-server'
import { parseArgs, UsageError } from './args'
import { asFlagError, CliError, type CliIO } from './io'
import { readOnlyLocation } from '../store/backends/read-only-store'
import { waitForSignal } from './signals'

export async function viewCommand(argv: string[], io: CliIO): Promise<number> {
  const { positionals, values } = parseArgs(argv, { values: ['port'], positionals: ['db'] })
  const database = positionals[0]
  const port = values.has('port') ? Number(values.get('port')) : 0
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError(`--port must be a port number, not ${values.get('port')}`)
  if (!readOnlyLocation(database)?.exists) throw new CliError(`no such database: ${database}`)
  const viewer = await startViewer({ database, port }).catch((error: unknown) => {
    throw asFlagError(error, '<db>')
  })
  io.stdout.write(`turnchart viewer: open ${viewer.url} (127.0.0.1 only, read-only; Ctrl-C stops it)\n`)
  await waitForSignal()
  await viewer.close()
  return 0
}
