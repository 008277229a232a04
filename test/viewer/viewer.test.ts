/**
 * The offline viewer in a real browser: headless Chromium (Debian's package, installed by
 * .ci/run) loads the page served on 127.0.0.1 and renders the sessions, a conversation with its
 * parts, and each turn's path through the chart (visited states highlighted, with times; the
 * running turn's current state marked, the page polling it). A screenshot is kept in
 * tmp/artifacts/viewer.png. Skipped, saying so, where no chromium is installed.
 */
import { execFile, execFileSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { cliArgs } from '../support/compiled'
import { promisify } from 'node:util'
import { createEngine, type Engine } from '../../src'
import { startScriptedServer, type ScriptedServer } from '../../src/testing'
import { startViewer, type Viewer } from '../../src/viewer/viewer-server'
import { modelFor, tempDbPath } from '../support/harness'
import { tool } from 'ai'
import { z } from 'zod'

jest.setTimeout(90_000)

const root = path.resolve(__dirname, '../..')
const chromium = ['chromium', 'chromium-browser'].find((bin) => {
  try {
    execFileSync('sh', ['-c', `command -v ${bin}`], { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
})
const withBrowser = chromium ? test : test.skip
if (!chromium) console.log('viewer browser test skipped: no chromium on PATH (.ci/run installs it)')

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
  const turn = engine.prompt(done.id, 'What is here?')
  await turn.done
  ids.done = done.id
  ids.doneTurn = turn.id
  // A second session whose turn is still streaming while the page loads.
  const live = await engine.createSession({ title: 'live session' })
  server.push({ type: 'stream', chunks: [{ text: 'still thinking' }], end: 'hang' })
  const running = engine.prompt(live.id, 'Take your time')
  ids.live = live.id
  ids.liveTurn = running.id
  await new Promise<void>((resolve) => {
    const off = engine.subscribe((e) => {
      if (e.type === 'part.delta') {
        off()
        resolve()
      }
    })
  })
  expect(await engine.prune({ olderThan: cut })).toBeGreaterThan(0)
  viewer = await startViewer({ database: dbPath })
})

afterAll(async () => {
  await viewer?.close()
  await engine?.close()
  await server?.close()
  fs.rmSync(path.dirname(dbPath), { recursive: true, force: true })
})

/** Chromium loads `url`, runs its scripts (virtual time), and prints the DOM; optionally a screenshot. */
async function browse(url: string, screenshot?: string): Promise<string> {
  const flags = ['--headless=new', '--no-sandbox', '--disable-gpu', '--no-first-run', '--virtual-time-budget=4000', '--window-size=1400,1100']
  // Async: the viewer answers from this process, so the event loop must stay free.
  const { stdout } = await promisify(execFile)(chromium!, [...flags, '--dump-dom', url], { timeout: 60_000, maxBuffer: 32 * 1024 * 1024 })
  if (screenshot) await promisify(execFile)(chromium!, [...flags, `--screenshot=${screenshot}`, url], { timeout: 60_000 })
  return stdout
}

test('the viewer listens on 127.0.0.1 and its page loads nothing from elsewhere', async () => {
  expect(viewer.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/)
  const page = await (await fetch(viewer.url)).text()
  expect(page).toContain('turnchart viewer')
  expect(page).not.toMatch(/<script[^>]*\ssrc=|<link[^>]*\shref=|@import|url\(\s*['"]?https?:/i)
  expect((await fetch(`${viewer.url}api/sessions`, { method: 'POST' })).status).toBe(405)
})

withBrowser('Chromium renders the sessions, a conversation with its parts, and the turn path through the chart', async () => {
  const artifacts = path.join(root, 'tmp/artifacts')
  fs.mkdirSync(artifacts, { recursive: true })
  const shot = path.join(artifacts, 'viewer.png')
  fs.rmSync(shot, { force: true })
  const dom = await browse(`${viewer.url}#/session/${ids.done}`, shot)
  expect(dom).toContain('data-ready="true"')
  // The sessions list, the selected one first in the main view.
  expect(dom).toContain(`data-session="${ids.done}"`)
  expect(dom).toContain(`data-session="${ids.live}"`)
  expect(dom).toContain('finished session')
  // The conversation with its parts.
  expect(dom).toContain('What is here?')
  expect(dom).toContain('Two files: a.txt and b.txt.')
  expect(dom).toMatch(/class="part part-tool" data-status="completed">tool list\(\{"path":"\."\}\) completed/)
  // The turn's path: visited states highlighted with their times, the others not.
  const stateClass = (state: string) => new RegExp(`<g class="([^"]*)" data-state="${state}"`).exec(dom.slice(dom.indexOf(`data-turn="${ids.doneTurn}"`)))?.[1]
  for (const state of ['idle', 'streaming', 'tool-running', 'completed']) expect(stateClass(state)).toBe('state visited')
  for (const state of ['retry-waiting', 'failed', 'aborted']) expect(stateClass(state)).toBe('state')
  expect(dom).toMatch(/data-state="tool-running"><rect[^>]*><\/rect><text[^>]*>tool-running<\/text><text class="time"[^>]*>\+\d+ ms<\/text>/)
  expect(dom).toMatch(/<path class="edge taken"[^>]*data-edge="streaming&gt;tool-running"/)
  expect(dom).toContain('tools.finished')
  expect(fs.statSync(shot).size).toBeGreaterThan(10_000)
})

withBrowser('a running turn is shown live: its current state marked, the page polling it', async () => {
  const dom = await browse(`${viewer.url}#/session/${ids.live}`)
  expect(dom).toContain('still thinking')
  expect(dom).toContain('· live')
  const turnSection = dom.slice(dom.indexOf(`<section class="turn" data-turn="${ids.liveTurn}"`))
  expect(turnSection).toMatch(/running \(streaming\)/)
  expect(turnSection).toMatch(/<g class="state visited current" data-state="streaming"/)
})

withBrowser('a turn whose log was pruned says so, with no chart drawn', async () => {
  const dom = await browse(`${viewer.url}#/session/${ids.pruned}`)
  expect(dom).toContain('An old answer.')
  const turnSection = dom.slice(dom.indexOf('<section class="turn"'))
  expect(turnSection).toMatch(/<div class="dim" data-pruned="">transition log pruned \(turnchart prune\)<\/div>/)
  expect(turnSection).not.toContain('data-state="idle"')
})

test('turnchart view <db>: prints its 127.0.0.1 URL, serves the API, and stops on SIGTERM (exit 0)', async () => {
  const { spawn } = require('node:child_process') as typeof import('node:child_process')
  const child = spawn(process.execPath, [...cliArgs(), 'view', dbPath], {
    cwd: root,
    env: { ...process.env, NO_COLOR: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
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
    expect(sessions.map((s) => s.id)).toEqual([ids.pruned, ids.done, ids.live])
    expect((await fetch(url)).headers.get('content-type')).toContain('text/html')
    child.kill('SIGTERM')
    expect(await exited).toBe(0)
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL')
  }
})
