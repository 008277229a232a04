/**
 * A PostgreSQL cluster of a test's own, to stop and start under a running engine: `initdb` on a
 * temporary folder, `pg_ctl` on a free port of 127.0.0.1, run as the `postgres` user when the
 * test runs as root (`initdb` refuses root). Debian's server binaries
 * (/usr/lib/postgresql/<version>/bin); `ownPostgres.available` says whether they are here.
 */
import { execFile } from 'node:child_process'
import fs from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import type { Requirement } from './requires'

const run = promisify(execFile)

function serverBin(): string | undefined {
  const root = '/usr/lib/postgresql'
  if (!fs.existsSync(root)) return undefined
  const versions = fs.readdirSync(root).sort((a, b) => Number(b) - Number(a))
  return versions.map((v) => path.join(root, v, 'bin')).find((bin) => fs.existsSync(path.join(bin, 'initdb')))
}

const bin = serverBin()
const asRoot = process.getuid?.() === 0

/** Whether a cluster of the test's own can be made here. */
export const ownPostgres: Requirement = {
  what: 'PostgreSQL server binaries',
  available: bin !== undefined && (!asRoot || fs.existsSync('/usr/sbin/runuser')),
  reason: bin === undefined ? 'no initdb under /usr/lib/postgresql/<version>/bin' : 'running as root without runuser (initdb refuses root)',
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo
      server.close(() => resolve(port))
    })
  })
}

export interface OwnCluster {
  /** postgres://postgres@127.0.0.1:<port>/postgres */
  url: string
  /** `pg_ctl stop -m immediate`: the server dies at once, as in a crash (no checkpoint). */
  crash(): Promise<void>
  start(): Promise<void>
  /** Stops the server and removes its folder. */
  remove(): Promise<void>
}

/**
 * @example
 * const cluster = await startOwnCluster()
 * await cluster.crash(); await cluster.start()
 */
export async function startOwnCluster(): Promise<OwnCluster> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'turnchart-own-pg-'))
  const data = path.join(dir, 'data')
  const port = await freePort()
  if (asRoot) fs.chownSync(dir, Number((await run('id', ['-u', 'postgres'])).stdout), Number((await run('id', ['-g', 'postgres'])).stdout))
  const as = (command: string, args: string[]) => (asRoot ? run('/usr/sbin/runuser', ['-u', 'postgres', '--', path.join(bin!, command), ...args]) : run(path.join(bin!, command), args))
  await as('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync'])
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`
  const start = async () => void (await as('pg_ctl', ['-D', data, '-o', options, '-l', path.join(dir, 'log'), '-w', 'start']))
  await start()
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    crash: async () => void (await as('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop'])),
    start,
    remove: async () => {
      await as('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']).catch(() => undefined)
      fs.rmSync(dir, { recursive: true, force: true })
    },
  }
}
