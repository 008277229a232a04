/**
 * The package as a user gets it, made once per jest run and shared by the tests that need it
 * (test/package): the repository cloned (its committed HEAD) into a temporary folder, `npm pack`
 * run there (the `prepack` script builds the clone's dist/), the tarball beside it. The
 * checkout's own dist/ is never touched: an app or a tool using it while the suite runs keeps it.
 *
 * Jest's global setup names the run's folder (TURNCHART_TEST_RUN, removed by its teardown). The
 * first worker to ask makes the package, under a lock directory; the others wait for its
 * result file. Without a run folder (a file run outside this jest config) each process makes its
 * own, in a folder removed at exit. TURNCHART_PACK_DIR, when set, is the folder instead (a new
 * empty one per run: .ci/run makes it, so that the compatibility suite after jest,
 * test/compat-v7/run.mjs, installs the same tarball instead of packing again; it is not removed).
 */
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

const root = path.resolve(__dirname, '../..')

export interface PackedPackage {
  /** The clone, its dist/ built by `prepack` (its node_modules: a link to this repository's). */
  clone: string
  /** The tarball `npm pack` wrote. */
  tarball: string
  /** The files in the tarball, as npm lists them. */
  files: string[]
  /** What `npm pack` printed (the prepack build's output, then its JSON). */
  output: string
}

/** Without the npm_* variables of a surrounding `npm test`, which would steer the inner npm. */
export function cleanEnv(): NodeJS.ProcessEnv {
  return { ...Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.toLowerCase().startsWith('npm_'))), NO_COLOR: '1' }
}

function make(dir: string): PackedPackage {
  fs.mkdirSync(dir, { recursive: true })
  const clone = path.join(dir, 'clone')
  const run = (command: string, args: string[], cwd: string) => execFileSync(command, args, { cwd, encoding: 'utf8', timeout: 300_000, env: cleanEnv(), stdio: ['ignore', 'pipe', 'pipe'] })
  run('git', ['clone', '--quiet', '--no-hardlinks', root, clone], dir)
  fs.symlinkSync(path.join(root, 'node_modules'), path.join(clone, 'node_modules'), 'dir')
  const output = run('npm', ['pack', '--json', '--pack-destination', dir], clone)
  const packed = JSON.parse(output.slice(output.search(/^\[$/m)))
  return { clone, tarball: path.join(dir, packed[0].filename), files: packed[0].files.map((f: { path: string }) => f.path), output }
}

/** Resolves once `file` exists (written by another worker with a rename, so whole). */
function whenWritten(file: string, timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const watcher = fs.watch(path.dirname(file), () => check())
    const timer = setTimeout(() => finish(new Error(`${file} was not written within ${timeoutMs} ms`)), timeoutMs)
    const finish = (error?: Error) => {
      watcher.close()
      clearTimeout(timer)
      if (error) reject(error)
      else resolve()
    }
    const check = () => {
      if (fs.existsSync(file)) finish()
    }
    check()
  })
}

let mine: Promise<PackedPackage> | undefined

/** The run's packed package (made on the first call of the run, in whichever worker asks first). */
export function packedPackage(): Promise<PackedPackage> {
  mine ??= shared()
  return mine
}

async function shared(): Promise<PackedPackage> {
  let dir = process.env.TURNCHART_PACK_DIR || process.env.TURNCHART_TEST_RUN
  if (!dir) {
    const own = fs.mkdtempSync(path.join(os.tmpdir(), 'turnchart-package-'))
    process.once('exit', () => fs.rmSync(own, { recursive: true, force: true }))
    dir = own
  }
  const result = path.join(dir, 'packed.json')
  try {
    fs.mkdirSync(path.join(dir, 'packed.lock'))
  } catch {
    await whenWritten(result, 600_000)
    const written = JSON.parse(fs.readFileSync(result, 'utf8')) as PackedPackage | { error: string }
    if ('error' in written) throw new Error(`packing the package failed in another worker: ${written.error}`)
    return written
  }
  let written: PackedPackage | { error: string }
  try {
    written = make(path.join(dir, 'package'))
  } catch (error) {
    written = { error: String((error as Error).stack ?? error) }
  }
  fs.writeFileSync(`${result}.tmp`, JSON.stringify(written))
  fs.renameSync(`${result}.tmp`, result)
  if ('error' in written) throw new Error(written.error)
  return written
}
