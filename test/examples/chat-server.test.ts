/**
 * `npm run example:chat` (examples/chat/server.ts, a real child process): it prints where its
 * database is, serves the page, and keeps the database after it stops, with or without --db,
 * so `turnchart sessions` can read it afterwards.
 */
import type { ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { forkNode } from '../support/compiled'
import { runCli } from '../cli/run-cli'

jest.setTimeout(120_000)

const root = path.resolve(__dirname, '../..')
let dir: string
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'turnchart-chat-example-'))
})
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }))

/** Starts the example; resolves with its printed URL and database once it serves. */
async function startExample(args: string[]): Promise<{ child: ChildProcess; url: string; database: string }> {
  const child = forkNode(path.join(root, 'examples/chat/server.ts'), args, {
    cwd: root,
    env: { ...process.env, PORT: '0', TURNCHART_BASE_URL: '', NO_COLOR: '1' },
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  })
  let output = ''
  return new Promise((resolve, reject) => {
    const read = (chunk: Buffer) => {
      output += chunk
      const url = /^turnchart chat example: (\S+)$/m.exec(output)?.[1]
      const database = /^database: (\S+) \(kept after exit; read it with npx turnchart sessions \S+\)$/m.exec(output)?.[1]
      if (url && database) resolve({ child, url, database })
    }
    child.stdout!.on('data', read)
    child.stderr!.on('data', read)
    child.on('exit', (code) => reject(new Error(`the example exited (${code}) before serving:\n${output}`)))
  })
}

function stop(child: ChildProcess): Promise<number | null> {
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  child.kill('SIGTERM')
  return exited
}

test.each([
  ['with --db <file>', (file: string) => ['--db', file]],
  ['without --db (a temporary file)', () => []],
])('%s: prints the database, serves the page, and keeps the database after it stops', async (_name, args) => {
  const file = path.join(dir, `chat-${args.length}.db`)
  const { child, url, database } = await startExample(args(file))
  try {
    if (args(file).length) expect(database).toBe(file)
    else expect(database.startsWith(os.tmpdir())).toBe(true)
    const page = await fetch(url)
    expect(page.status).toBe(200)
    const html = await page.text()
    expect(html).toContain('<div id="root">')
    expect(html).toContain('<link rel="icon" href="/favicon.svg" type="image/svg+xml">')
    for (const icon of ['favicon.svg', 'favicon.ico']) {
      const answer = await fetch(new URL(icon, url))
      expect({ status: answer.status, type: answer.headers.get('content-type') }).toEqual({ status: 200, type: 'image/svg+xml' })
      expect(await answer.text()).toMatch(/^<svg /)
    }
  } finally {
    expect(await stop(child)).toBe(0)
  }
  expect(fs.existsSync(database)).toBe(true)
  const sessions = await runCli(['sessions', database])
  expect(sessions).toMatchObject({ code: 0, stdout: 'no sessions\n', stderr: '' })
  if (!args(file).length) fs.rmSync(path.dirname(database), { recursive: true, force: true })
})

test('an argument other than --db is refused with the usage (exit 2)', async () => {
  const child = forkNode(path.join(root, 'examples/chat/server.ts'), ['--port', '3000'], { cwd: root, stdio: ['ignore', 'pipe', 'pipe', 'ipc'] })
  let stderr = ''
  child.stderr!.on('data', (chunk) => (stderr += chunk))
  const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)))
  expect(code).toBe(2)
  expect(stderr).toContain('usage: npm run example:chat [-- --db <file>]')
})
