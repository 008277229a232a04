/**
 * The viewer's server (src/viewer/viewer-server.ts) over real HTTP on a real SQLite file (and
 * a PostgreSQL schema when a server answers): the page it serves is self-contained and may
 * load nothing from elsewhere; it answers only GET, only under its own address; errors are
 * pages or JSON saying what is missing; and its live stream pushes what another connection
 * writes, the server noticing by itself. `turnchart view` serves it and refuses a database that
 * is not turnchart's. The page in a browser: test/browser/viewer-page.test.ts.
 */
import { spawn } from 'node:child_process'
import fs from 'node:fs'
import http from 'node:http'
import path from 'node:path'
import Database from 'better-sqlite3'
import { tool } from 'ai'
import { z } from 'zod'
import { createEngine, type Engine } from '../../src'
import { startScriptedServer, type ScriptedServer } from '../../src/testing'
import { startViewer, type Viewer } from '../../src/viewer/viewer-server'
import type { SessionPage } from '../../src/viewer/wire'
import { runCli } from '../cli/run-cli'
import { cliArgs } from '../support/compiled'
import { dropSchemas, freshSchemaName, modelFor, pgBaseUrl, tempDbPath, withParams } from '../support/harness'
import { itPostgres } from '../support/requires'
import { readEvents } from './event-stream'

jest.setTimeout(60_000)

const root = path.resolve(__dirname, '../..')
let server: ScriptedServer
let engine: Engine
let viewer: Viewer
let dbPath: string
const ids: Record<string, string> = {}

beforeAll(async () => {
  server = await startScriptedServer()
  dbPath = tempDbPath()
  const list = tool({ description: 'List a folder', inputSchema: z.object({ path: z.string() }), execute: async () => ['a.txt', 'b.txt'] })
  engine = await createEngine({ database: dbPath, model: modelFor(server), tools: { list }, flushIntervalMs: 10 })
  // A session whose turn ends before `cut` (the others after it), its log pruned below.
  const pruned = await engine.createSession({ title: 'pruned session' })
  server.text('An old answer.')
  await engine.prompt(pruned.id, 'Long ago').done
  ids.pruned = pruned.id
  const cut = Date.now() + 1
  while (Date.now() <= cut) await new Promise((resolve) => setImmediate(resolve))
  const done = await engine.createSession({ title: 'finished session' })
  server.tool('list', { path: '.' })
  server.text('Two files: a.txt and b.txt.')
  const png = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex')
  const turn = engine.prompt(done.id, [
    { type: 'text', text: 'What is here?' },
    { type: 'image', image: png, mediaType: 'image/png' },
  ])
  await turn.done
  ids.done = done.id
  ids.doneTurn = turn.id
  expect(await engine.prune({ olderThan: cut })).toBeGreaterThan(0)
  viewer = await startViewer({ database: dbPath })
})

afterAll(async () => {
  await viewer?.close()
  await engine?.close()
  await server?.close()
  fs.rmSync(path.dirname(dbPath), { recursive: true, force: true })
})

/** A GET with a Host header of our choosing (fetch does not let one set it). */
function getWithHost(url: string, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    http.get(url, { headers: { host } }, (response) => {
      response.resume()
      resolve(response.statusCode ?? 0)
    }).on('error', reject)
  })
}

test('the page is self-contained (its chart and script inline) and may load nothing from elsewhere', async () => {
  expect(viewer.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/)
  const response = await fetch(viewer.url)
  const page = await response.text()
  expect(page).toContain('<title>turnchart viewer</title>')
  expect(page).not.toMatch(/<script[^>]*\ssrc=|<link[^>]*\shref=|@import|url\(\s*['"]?https?:/i)
  // The laid-out chart is in the page: every state of the machine has its box.
  const drawing = JSON.parse(/<script type="application\/json" id="chart-drawing">(.*?)<\/script>/s.exec(page)![1])
  expect(drawing.boxes.map((b: { id: string }) => b.id)).toEqual(expect.arrayContaining(['idle', 'running', 'step', 'streaming', 'compaction-retry-waiting', 'aborted']))
  // The browser enforces it: only the page's own script runs, and it talks to this server only.
  const policy = response.headers.get('content-security-policy')!
  expect(policy).toMatch(/default-src 'none'; script-src 'sha256-[^']+';/)
  expect(policy).toContain("connect-src 'self'")
  expect(page.length).toBeLessThan(150_000)
})

test('only GET, only under its own address; unknown pages, API paths and sessions are answered as such', async () => {
  expect((await fetch(`${viewer.url}api/sessions`, { method: 'POST' })).status).toBe(405)
  // A web page whose own name was pointed at 127.0.0.1 (DNS rebinding) is refused.
  expect(await getWithHost(`${viewer.url}api/sessions`, 'attacker.example:80')).toBe(421)
  expect(await getWithHost(`${viewer.url}api/sessions`, `localhost:${new URL(viewer.url).port}`)).toBe(200)
  const missingPage = await fetch(`${viewer.url}nowhere`)
  expect(missingPage.status).toBe(404)
  expect(await missingPage.text()).toMatch(/Nothing here.*<a href="\/">← All sessions<\/a>/s)
  expect((await fetch(`${viewer.url}api/nowhere`)).status).toBe(404)
  const unknown = await fetch(`${viewer.url}api/sessions/ses_nope`)
  expect(unknown.status).toBe(404)
  expect(await unknown.json()).toEqual({ error: 'not found' })
  expect((await fetch(`${viewer.url}api/live?session=${encodeURIComponent('../x')}`)).status).toBe(400)
})

test("a session's page: the conversation (a file's bytes left out) and each turn's path, every row on its drawn edge", async () => {
  const page = (await (await fetch(`${viewer.url}api/sessions/${ids.done}`)).json()) as SessionPage
  expect(page.messages.map((m) => m.info.role)).toEqual(['user', 'assistant'])
  const file = page.messages[0].parts.find((p) => p.type === 'file')
  expect(file).toMatchObject({ type: 'file', mediaType: 'image/png', bytes: 16 })
  expect(file).not.toHaveProperty('data')
  expect(page.turns).toHaveLength(1)
  expect(page.turns[0].path.map((s) => [s.from, s.to, s.edges])).toEqual([
    ['idle', 'step-gate', ['idle>turn.start>running']],
    ['step-gate', 'streaming', ['step-gate>gate.continue>step']],
    ['streaming', 'tool-running', ['streaming>step.finished[hasToolCalls]>tool-running']],
    ['tool-running', 'streaming', ['tool-running>gate.continue>step']],
    ['streaming', 'completed', ['streaming>step.finished>completed']],
  ])
})

test('the live stream: the list and the session at once, then what another connection writes, the server noticing it by itself', async () => {
  const session = await engine.createSession({ title: 'watched' })
  const stream = await readEvents(`${viewer.url}api/live?session=${session.id}`)
  try {
    await stream.next((e) => e.event === 'sessions' && e.data.some((s: { id: string }) => s.id === session.id))
    await stream.next((e) => e.event === 'session' && e.data.session.id === session.id && e.data.turns.length === 0)
    server.push({ type: 'stream', chunks: [{ text: 'still thinking' }], end: 'hang' })
    const turn = engine.prompt(session.id, 'Take your time')
    const streaming = await stream.next((e) => e.event === 'session' && e.data.turns[0]?.state === 'streaming')
    expect(streaming.data.turns[0]).toMatchObject({ id: turn.id, outcome: null })
    await stream.next((e) => e.event === 'session' && JSON.stringify(e.data.messages).includes('still thinking'))
    turn.abort()
    const ended = await stream.next((e) => e.event === 'session' && e.data.turns[0]?.outcome === 'aborted')
    expect(ended.data.turns[0].path.map((s: { to: string }) => s.to)).toEqual(['step-gate', 'streaming', 'aborted'])
    // Sent only when changed: no two consecutive pushes of the same session are equal.
    const pushes = stream.events.filter((e) => e.event === 'session').map((e) => JSON.stringify(e.data))
    expect(pushes.filter((text, i) => i > 0 && text === pushes[i - 1])).toEqual([])
  } finally {
    stream.close()
  }
})

test('a turn whose log was pruned comes with no path: the page says its log was pruned, and draws no chart', async () => {
  const page = (await (await fetch(`${viewer.url}api/sessions/${ids.pruned}`)).json()) as SessionPage
  expect(page.turns).toHaveLength(1)
  expect(page.turns[0]).toMatchObject({ outcome: 'completed', path: [] })
  expect(JSON.stringify(page.messages)).toContain('An old answer.')
})

test('the live stream of a session the database does not hold says so', async () => {
  const stream = await readEvents(`${viewer.url}api/live?session=ses_nope`)
  try {
    expect((await stream.next((e) => e.event === 'missing')).data).toEqual({ session: 'ses_nope' })
  } finally {
    stream.close()
  }
})

test('a database that stops answering is said on the stream, and the stream goes on when it answers again', async () => {
  const copy = path.join(path.dirname(dbPath), 'copy.db')
  await new Promise<void>((resolve, reject) => {
    const source = new Database(dbPath, { readonly: true })
    source.backup(copy).then(() => (source.close(), resolve()), reject)
  })
  const copyViewer = await startViewer({ database: copy })
  const stream = await readEvents(`${copyViewer.url}api/live?session=${ids.done}`)
  const other = new Database(copy)
  try {
    await stream.next((e) => e.event === 'session')
    // Another program renames a table under the viewer: its reads fail.
    other.exec('alter table turnchart_parts rename to parts_elsewhere')
    const failure = await stream.next((e) => e.event === 'failure')
    expect(failure.data.message).toMatch(/no such table: turnchart_parts/)
    other.exec('alter table parts_elsewhere rename to turnchart_parts')
    const sessionEvents = () => stream.events.filter((e) => e.event === 'session').length
    const before = sessionEvents()
    await stream.next((e) => e.event === 'session' && sessionEvents() > before)
  } finally {
    other.close()
    stream.close()
    await copyViewer.close()
  }
})

itPostgres('on PostgreSQL the server notices another connection\'s commits too (its snapshot moves)', async () => {
  const schema = freshSchemaName()
  const url = withParams(pgBaseUrl, { schema })
  const pgServer = await startScriptedServer()
  const pgEngine = await createEngine({ database: url, model: modelFor(pgServer), flushIntervalMs: 10 })
  const pgViewer = await startViewer({ database: url })
  try {
    const session = await pgEngine.createSession({ title: 'on postgres' })
    const stream = await readEvents(`${pgViewer.url}api/live?session=${session.id}`)
    try {
      await stream.next((e) => e.event === 'session' && e.data.turns.length === 0)
      pgServer.text('from postgres')
      await pgEngine.prompt(session.id, 'hi').done
      const done = await stream.next((e) => e.event === 'session' && e.data.turns[0]?.outcome === 'completed')
      expect(JSON.stringify(done.data.messages)).toContain('from postgres')
    } finally {
      stream.close()
    }
  } finally {
    await pgViewer.close()
    await pgEngine.close()
    await pgServer.close()
    await dropSchemas(schema)
  }
})

test('turnchart view <db>: prints its 127.0.0.1 URL, serves the page and the API, and stops on SIGTERM (exit 0)', async () => {
  const child = spawn(process.execPath, [...cliArgs(), 'view', dbPath], { cwd: root, env: { ...process.env, NO_COLOR: '1' }, stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  try {
    const url = await new Promise<string>((resolve, reject) => {
      child.stdout.on('data', (chunk) => {
        stdout += chunk
        const match = /open (http:\/\/127\.0\.0\.1:\d+\/)/.exec(stdout)
        if (match) resolve(match[1])
      })
      child.on('exit', () => reject(new Error(`view exited early: ${stdout}`)))
    })
    const sessions = (await (await fetch(`${url}api/sessions`)).json()) as Array<{ id: string }>
    // Oldest first; other tests of this file add sessions of their own after these two.
    expect(sessions.map((s) => s.id).filter((id) => id === ids.pruned || id === ids.done)).toEqual([ids.pruned, ids.done])
    const page = await fetch(url)
    expect(page.headers.get('content-type')).toContain('text/html')
    expect(await page.text()).toContain('id="chart-drawing"')
    child.kill('SIGTERM')
    expect(await exited).toBe(0)
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL')
  }
})

test('turnchart view refuses a database that is not turnchart\'s, saying so (exit 1)', async () => {
  const other = path.join(path.dirname(dbPath), 'app.db')
  const db = new Database(other)
  db.exec('create table users (id integer primary key)')
  db.close()
  const run = await runCli(['view', other])
  expect(run.code).toBe(1)
  expect(run.stderr).toBe(`turnchart: ${other} is not a turnchart database: it has none of the turnchart_* tables\n`)
})
