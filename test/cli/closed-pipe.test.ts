/**
 * `turnchart show <db> <session> | head -2`: the reader closes the pipe after the lines it
 * wanted; the CLI stops quietly with status 0 (no EPIPE stack trace, no status 1).
 */
import { spawn } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { createEngine } from '../../src'
import { startScriptedServer } from '../../src/testing'
import { cliArgs } from '../support/compiled'
import { modelFor, tempDbPath } from '../support/harness'
import { root } from './run-cli'

test('show into a pipe the reader closes after its first chunk: exit status 0, nothing on stderr', async () => {
  const server = await startScriptedServer()
  const dbPath = tempDbPath()
  try {
    const engine = await createEngine({ database: dbPath, model: modelFor(server) })
    const session = await engine.createSession()
    // An answer far larger than a pipe's buffer (64 KiB): the CLI is still writing when the reader goes.
    server.text('word '.repeat(100_000), { deltas: 50 }) // (in 50 deltas: what is measured is the pipe, not the stream)
    expect((await engine.prompt(session.id, 'Say a lot.').done).outcome).toBe('completed')
    await engine.close()

    const child = spawn(process.execPath, [...cliArgs(), 'show', dbPath, session.id], { cwd: root, env: { ...process.env, NO_COLOR: '1' }, stdio: ['ignore', 'pipe', 'pipe'] })
    let stderr = ''
    child.stderr.on('data', (chunk) => (stderr += chunk))
    const first = await new Promise<string>((resolve) => child.stdout.once('data', (chunk: Buffer) => resolve(chunk.toString())))
    child.stdout.destroy() // as `head` exits once it has its lines
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve))
    expect(first).toContain(`session ${session.id}`)
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' })
  } finally {
    await server.close()
    fs.rmSync(path.dirname(dbPath), { recursive: true, force: true })
  }
}, 60_000)
