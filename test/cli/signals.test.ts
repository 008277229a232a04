/**
 * SIGINT/SIGTERM: the demo (a real child process) closes its engine before exiting, so no
 * turn is left owned by a dead process (each has ended, or is released for the next engine),
 * and no part is left open. The retry countdown prints once per attempt when stdout is not a
 * terminal.
 */
import { spawn } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { cliArgs } from '../support/compiled'
import { colors, type CliIO } from '../../src/cli/io'
import { createPrinter } from '../../src/cli/demo'
import { root } from './run-cli'

let dir: string
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'turnchart-signals-'))
})
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }))

test.each([
  ['SIGTERM', 143],
  ['SIGINT', 130],
] as const)('%s during a turn: the demo closes its engine and exits with %i; no turn stays owned, no part open', async (signal, status) => {
  const db = path.join(dir, `${signal}.db`)
  const child = spawn(process.execPath, [...cliArgs(), 'demo', '--db', db], {
    cwd: root,
    env: { ...process.env, NO_COLOR: '1', TURNCHART_BASE_URL: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  child.stderr.on('data', (chunk) => (stderr += chunk))
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  // The first turn is under way once its first transition is printed.
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (chunk) => {
      stdout += chunk
      if (stdout.includes('step-gate → streaming')) resolve()
    })
    child.on('exit', () => reject(new Error(`the demo exited before its first turn started\n${stdout}\n${stderr}`)))
  })
  child.kill(signal)
  expect(await exited).toBe(status)
  expect(stderr).toContain(`turnchart: ${signal}: closing the engine`)

  const Database = require('better-sqlite3')
  const read = new Database(db, { readonly: true })
  try {
    const turns = read.prepare('select state, outcome, owner from turnchart_turns').all() as Array<{ state: string; outcome: string | null; owner: string | null }>
    expect(turns.length).toBeGreaterThan(0)
    expect(turns.filter((t) => t.outcome === null && t.owner !== null)).toEqual([])
    const parts = (read.prepare('select data from turnchart_parts').all() as Array<{ data: string }>).map((r) => JSON.parse(r.data))
    const open = parts.filter((p) => ((p.type === 'text' || p.type === 'reasoning') && p.time?.end === undefined) || (p.type === 'tool' && ['pending', 'running'].includes(p.state?.status)))
    expect(open).toEqual([])
  } finally {
    read.close()
  }
}, 60_000)

test('without a terminal the retry progress prints one line per attempt (no countdown every 0.5 s)', () => {
  jest.useFakeTimers({ now: 1_000_000 })
  try {
    let out = ''
    const io: CliIO = { stdout: { write: (s: string) => ((out += s), true) } as never, stderr: process.stderr, env: { NO_COLOR: '1' } }
    const printer = createPrinter(io, colors(io))
    const retry = (attempt: number) =>
      printer.onEvent({ type: 'session.status', sessionId: 's', status: { type: 'retry', turnId: 't', attempt, message: 'Rate limited', next: Date.now() + 5000 } } as never)
    retry(1)
    jest.advanceTimersByTime(4000)
    retry(2)
    jest.advanceTimersByTime(4000)
    printer.close()
    expect(out.match(/⏳.*/g)).toEqual([
      '⏳ attempt 1 failed (Rate limited): attempt 2 in 5.0 s',
      '⏳ attempt 2 failed (Rate limited): attempt 3 in 5.0 s',
    ])
  } finally {
    jest.useRealTimers()
  }
})
