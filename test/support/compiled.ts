/**
 * How a test starts a TypeScript entry point as a child process: its bundle from the global
 * setup (plain Node: fast), or the source through ts-node when there is none (a test file run
 * outside jest's config).
 */
import { fork, type ChildProcess, type ForkOptions } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'

const root = path.resolve(__dirname, '../..')

export interface NodeEntry {
  /** The script to run: the bundle, or the TypeScript source. */
  file: string
  /** Node's arguments before the script (`-r ts-node/register/transpile-only` for a source). */
  execArgv: string[]
}

/**
 * @example
 * const { file, execArgv } = nodeEntry(path.join(__dirname, 'crash-child.ts'))
 * fork(file, args, { execArgv })
 */
export function nodeEntry(source: string): NodeEntry {
  const bin = process.env.TURNCHART_TEST_BIN
  if (bin) {
    const bundle = path.join(bin, path.relative(root, source)).replace(/\.ts$/, '.js')
    if (fs.existsSync(bundle)) return { file: bundle, execArgv: [] }
  }
  return { file: source, execArgv: ['-r', 'ts-node/register/transpile-only'] }
}

/** The CLI (src/cli/main.ts) as `spawn(process.execPath, [...cliArgs(), ...args])` runs it. */
export function cliArgs(): string[] {
  const { file, execArgv } = nodeEntry(path.join(root, 'src/cli/main.ts'))
  return [...execArgv, file]
}

/** `fork` of a TypeScript entry point, as `nodeEntry` finds it. */
export function forkNode(source: string, args: string[], options: ForkOptions = {}): ChildProcess {
  const { file, execArgv } = nodeEntry(source)
  return fork(file, args, { ...options, execArgv: [...execArgv, ...(options.execArgv ?? [])] })
}
