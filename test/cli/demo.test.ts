/**
 * `turnchart demo` end to end, as a child process: the built-in script (reasoning, a real
 * tool, a 429 and its retry, an overflow and its compaction, an abort), then `sessions`,
 * `show` and `replay` on the database it wrote. And the same agent against an endpoint given
 * by TURNCHART_BASE_URL (here a scripted server the test starts).
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { startScriptedServer } from '../../src/testing'
import { dropSchemas, freshSchemaName, pgBaseUrl, withParams } from '../support/harness'
import { itPostgres } from '../support/requires'
import { root, runCli } from './run-cli'

let dir: string
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'turnchart-cli-'))
})
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }))

test('the demo runs the whole script, stores it, and sessions/show/replay read it back', async () => {
  const db = path.join(dir, 'demo.db')
  const started = Date.now()
  const demo = await runCli(['demo', '--db', db])
  const seconds = (Date.now() - started) / 1000
  expect(demo.stderr).toBe('')
  expect(demo.code).toBe(0)
  expect(seconds).toBeLessThan(15)
  const out = demo.stdout
  // streaming reasoning and text, the real tool (it lists the working directory: the repo)
  expect(out).toContain('thinking › The user wants to know what this folder holds.')
  expect(out).toContain('assistant › Let me look at the folder.')
  expect(out).toContain('⚙ list({"path":"."})')
  expect(out).toMatch(/✓ list → \[.*"README\.md"/)
  // the 429, its progress line, the retry
  expect(out).toContain('streaming → retry-waiting  step.failed')
  expect(out).toMatch(/⏳ attempt 1 failed \(Rate limit reached.*\): attempt 2 in \d\.\d s/)
  // the retry timer by a readable name, not XState's (which the log keeps)
  expect(out).toContain('retry-waiting → streaming  retry timer')
  expect(out).not.toContain('xstate.')
  // the overflow and its compaction
  expect(out).toContain('streaming → compacting  step.failed')
  expect(out).toContain('summary › Summary:')
  expect(out).toContain('compacting → step-gate  compaction.finished')
  // the sub-agent: a child turn, its lines indented under the parent's, its answer the call's output
  expect(out).toContain('⚙ researcher({"question":"Which entries of the current folder are folders?"})')
  expect(out).toMatch(/^ {2}│ {3}⚙ list\(\{"path":"\."\}\)$/m)
  expect(out).toMatch(/^ {2}│ assistant › \d+ of them are folders/m)
  expect(out).toMatch(/^ {2}✓ researcher → "\d+ of them are folders/m)
  // the count agrees with the folders it names (and how many more it leaves out)
  const [, count, names, more] = /(\d+) of them are folders: (.*?)(?: and (\d+) more)?\.$/m.exec(out)!
  expect(names.split(', ').length + Number(more ?? 0)).toBe(Number(count))
  // the abort
  expect(out).toContain('streaming → aborted  turn.abort')
  expect(out).toContain('MessageAbortedError')
  expect(out.match(/^turn trn_\S+: (\w+)/gm)?.map((l) => l.split(': ')[1])).toEqual(['completed', 'completed', 'completed', 'aborted'])
  expect(out).toContain(`Everything is stored in ${db}`)
  expect(fs.existsSync(db)).toBe(true)

  const sessions = await runCli(['sessions', db])
  expect(sessions.code).toBe(0)
  const sessionId = sessions.stdout.split(/\s+/)[0]
  expect(sessionId).toMatch(/^ses_/)
  expect(sessions.stdout).toContain('4 turns (completed, completed, completed, aborted)')

  const show = await runCli(['show', db, sessionId])
  expect(show.code).toBe(0)
  expect(show.stdout).toContain('idle → step-gate → streaming → tool-running → streaming → retry-waiting → streaming → completed')
  expect(show.stdout).toContain('idle → step-gate → streaming → compacting → step-gate → streaming → completed')
  expect(show.stdout).toContain('idle → step-gate → streaming → aborted')
  expect(show.stdout).toMatch(/tool list\(\{"path":"\."\}\) completed/)
  expect(show.stdout).toContain('compaction (automatic)')
  expect(show.stdout).toContain('error MessageAbortedError')
  // the run tree: the child turn under its parent, named by its call, with its path and messages
  expect(show.stdout).toMatch(/^ {2}└ child turn trn_\S+ \(researcher, call \S+\): completed {2}idle → step-gate → streaming → tool-running → streaming → completed$/m)
  expect(show.stdout).toMatch(/^ {4}user msg_\S+\n {6}Which entries of the current folder are folders\?$/m)
  const childShown = JSON.parse((await runCli(['show', db, sessionId, '--json'])).stdout)
  const parentTurn = childShown.turns[2]
  expect(parentTurn.children).toHaveLength(1)
  expect(parentTurn.children[0]).toMatchObject({ parentTurnId: parentTurn.id, outcome: 'completed' })
  // a child session is not listed with the app's sessions
  expect(sessions.stdout.trim().split('\n').filter((l) => /^ses_/.test(l))).toHaveLength(1)

  const firstTurn = /turnchart replay \S+ (trn_\S+)/.exec(out)![1]
  const replay = await runCli(['replay', db, firstTurn])
  expect(replay.code).toBe(0)
  expect(replay.stdout).toMatch(/retry-waiting → streaming  retry timer\n/)
  const replayJson = JSON.parse((await runCli(['replay', db, firstTurn, '--json'])).stdout)
  expect(replayJson.transitions.map((t: { event: string }) => t.event)).toContain('xstate.after.retryDelay.turn.running.step.retry-waiting')
  const arrows = replay.stdout.match(/\S+ → \S+/g)
  expect(arrows).toEqual([
    'idle → step-gate',
    'step-gate → streaming',
    'streaming → tool-running',
    'tool-running → streaming',
    'streaming → retry-waiting',
    'retry-waiting → streaming',
    'streaming → completed',
  ])
}, 60_000)

test("the eval suite of docs/debugging-and-evals.md passes on the demo's database, and says a re-run with another system prompt diverged", async () => {
  const db = path.join(dir, 'demo.db') // written by the test above
  const turns = JSON.parse((await runCli(['show', db, (await runCli(['sessions', db, '--json'])).stdout.match(/ses_\w+/)![0], '--json'])).stdout).turns as Array<{ id: string }>
  const page = fs.readFileSync(path.join(root, 'docs/debugging-and-evals.md'), 'utf8')
  const section = page.slice(page.indexOf('## Eval suites'))
  const suite = /```json\n([\s\S]*?)```/.exec(section)![1].replace("<the first turn's id>", turns[0].id).replace("<the third turn's id>", turns[2].id)
  fs.writeFileSync(path.join(dir, 'demo-suite.json'), suite)
  const passed = await runCli(['eval', path.join(dir, 'demo-suite.json')])
  expect(passed.code).toBe(0)
  const table = /and prints:\n\n```text\n([\s\S]*?)```/.exec(section)![1]
  expect(passed.stdout.replace(/; \d+ tokens\n$/, '; <n> tokens\n')).toBe(table)

  fs.writeFileSync(path.join(dir, 'demo-suite.json'), JSON.stringify({ ...JSON.parse(suite), system: 'Answer in French.' }))
  const diverged = await runCli(['eval', path.join(dir, 'demo-suite.json')])
  expect(diverged.code).toBe(1)
  const rows = diverged.stdout.split('\n').filter((line) => /^(pass|failed|error) /.test(line))
  expect(rows).toHaveLength(2)
  for (const row of rows) expect(row).toMatch(/^error .*0\/0 +the re-run diverged from the recording: .*the system prompt differs/)
}, 60_000)

test('with TURNCHART_BASE_URL the same agent runs against that endpoint', async () => {
  const server = await startScriptedServer()
  try {
    server.tool('list', { path: '.' })
    server.text('Here it is.')
    server.text('A summary.')
    server.tool('researcher', { question: 'Which entries are folders?' })
    server.tool('list', { path: '.' })
    server.text('Some are folders.')
    server.text('The researcher says: some are folders.')
    server.push({ type: 'stream', chunks: Array.from({ length: 80 }, (_, i) => ({ text: `w${i} ` })), delayMs: 5, end: 'hang' })
    const db = path.join(dir, 'real.db')
    const demo = await runCli(['demo', '--db', db], { TURNCHART_BASE_URL: server.url, TURNCHART_MODEL: 'my-model', TURNCHART_API_KEY: 'sk-test' })
    expect(demo.stderr).toBe('')
    expect(demo.code).toBe(0)
    expect(demo.stdout).toContain(`turnchart demo against ${server.url} (model my-model)`)
    expect(demo.stdout.match(/^turn trn_\S+: (\w+)/gm)?.map((l) => l.split(': ')[1])).toEqual(['completed', 'completed', 'completed', 'aborted'])
    expect(server.requests[0].body.model).toBe('my-model')
    expect(server.requests[0].headers.authorization).toBe('Bearer sk-test')
    expect(server.requests[0].body.tools[0].function.name).toBe('list')
  } finally {
    await server.close()
  }
}, 60_000)

itPostgres('demo --db <postgres:// URL> stores the demo in that database, read back by sessions', async () => {
  const schema = freshSchemaName()
  const database = withParams(pgBaseUrl, { schema })
  try {
    const demo = await runCli(['demo', '--db', database])
    expect(demo.stderr).toBe('')
    expect(demo.code).toBe(0)
    expect(demo.stdout).toContain(`database: ${database}\n`)
    expect(demo.stdout).toContain(`npx turnchart sessions '${database}'`)
    const sessions = await runCli(['sessions', database])
    expect(sessions.code).toBe(0)
    expect(sessions.stdout).toContain('4 turns (completed, completed, completed, aborted)  turnchart demo')
  } finally {
    await dropSchemas(schema)
  }
}, 60_000)
