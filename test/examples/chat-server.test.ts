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

/** The UI stream's chunks (`data: {...}` lines) read until `done` says what was wanted is there. */
async function readChunks(response: Response, done: (chunks: Array<Record<string, unknown>>) => boolean): Promise<Array<Record<string, unknown>>> {
  const chunks: Array<Record<string, unknown>> = []
  const decoder = new TextDecoder()
  let buffer = ''
  for await (const bytes of response.body!) {
    buffer += decoder.decode(bytes as Uint8Array, { stream: true })
    const lines = buffer.split('\n')
    buffer = lines.pop()!
    for (const line of lines) if (line.startsWith('data: {')) chunks.push(JSON.parse(line.slice('data: '.length)))
    if (done(chunks)) return chunks
  }
  return chunks
}

test('a charge killed mid-call is in doubt after a restart, and a person settles it through the page\'s route', async () => {
  const file = path.join(dir, 'charge.db')
  const first = await startExample(['--db', file])
  const chatId = 'chat-charge'
  const message = { id: 'msg-1', role: 'user', parts: [{ type: 'text', text: 'Charge my card 20 euros' }] }
  const response = await fetch(new URL('api/chat', first.url), { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ id: chatId, messages: [message] }) })
  // The charge runs (20 s): the process dies under it.
  const chunks = await readChunks(response, (seen) => seen.some((c) => c.type === 'data-turn-state' && (c.data as { state: string }).state === 'tool-running'))
  const callId = chunks.find((c) => c.type === 'tool-input-available' && c.toolName === 'charge')!.toolCallId as string
  const turnId = (chunks.find((c) => c.type === 'data-turn-state')!.data as { turnId: string }).turnId
  first.child.kill('SIGKILL')
  await new Promise((resolve) => first.child.on('exit', resolve))

  const second = await startExample(['--db', file])
  try {
    const shown = await runCli(['show', file, chatId])
    expect(shown.stdout).toContain('call-in-doubt')
    // "It did not run" on the page: the model is told, and answers.
    const settled = await fetch(new URL(`api/chat/${chatId}/calls`, second.url), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ turnId, callId, error: 'not charged (checked with the bank)' }),
    })
    expect(settled.status).toBe(204)
    const stream = await fetch(new URL(`api/chat/${chatId}/stream`, second.url))
    if (stream.status === 200) await readChunks(stream, () => false)
    const stored = (await (await fetch(new URL(`api/chat/${chatId}/messages`, second.url))).json()) as Array<{ role: string; parts: Array<{ type: string; text?: string; state?: string; errorText?: string }> }>
    const answer = stored.at(-1)!
    expect(answer.parts.find((p) => p.type === 'tool-charge')).toMatchObject({ state: 'output-error', errorText: expect.stringContaining('not charged') })
    expect(answer.parts.filter((p) => p.type === 'text').map((p) => p.text).join('')).toContain('Nothing was charged')
  } finally {
    expect(await stop(second.child)).toBe(0)
  }
})
