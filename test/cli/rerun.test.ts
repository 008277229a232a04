/**
 * `turnchart rerun <db> <turn>`: the CLI (a child process) re-runs a turn stored in a real
 * SQLite file in a scratch database, against its recorded responses (no provider), against
 * another model (the scripted server over loopback, an OpenAI-compatible endpoint), with
 * another system prompt, or with the app's tools run for real; it prints the parts side by
 * side with the first difference marked, and never changes the database.
 */
import crypto from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { tool } from 'ai'
import { z } from 'zod'
import { createEngine } from '../../src'
import { startScriptedServer, type ScriptedServer } from '../../src/testing'
import { modelFor, tempDbPath } from '../support/harness'
import { root, runCli } from './run-cli'

jest.setTimeout(60_000)

let server: ScriptedServer
let dbPath: string
let turnId: string
const temporary: string[] = []

const add = tool({ description: 'Add two numbers', inputSchema: z.object({ a: z.number(), b: z.number() }), execute: async ({ a, b }) => ({ sum: a + b }) })

/** A stored turn with reasoning, a tool call, a 429 that was retried, a compaction, then the answer. */
beforeAll(async () => {
  server = await startScriptedServer()
  dbPath = tempDbPath()
  const engine = await createEngine({
    database: dbPath,
    model: modelFor(server),
    system: 'You add numbers.',
    tools: { add },
    limits: { context: 1000, output: 100 },
    retry: { initialDelayMs: 1, maxDelayMs: 5, jitter: 0 },
  })
  server.push({ type: 'stream', chunks: [{ reasoning: 'I should add.' }, { text: 'Adding.' }, { tool: { name: 'add', input: { a: 1, b: 2 }, id: 'call_1' } }], usage: { input: 100, output: 10 } })
  server.error(429, { error: { message: 'Rate limit reached for requests', type: 'rate_limit_error' } }, { 'retry-after': '1' })
  server.push({ type: 'stream', chunks: [{ text: 'And 3+4.' }, { tool: { name: 'add', input: { a: 3, b: 4 }, id: 'call_2' } }], usage: { input: 950, output: 20 } })
  server.text('Summary: two sums.', { usage: { input: 40, output: 5 } })
  server.text('The sums are 3 and 7.', { usage: { input: 50, output: 4 } })
  const session = await engine.createSession()
  const turn = engine.prompt(session.id, 'Add 1+2, then 3+4.')
  expect((await turn.done).outcome).toBe('completed')
  turnId = turn.id
  await engine.close()
})
afterAll(async () => {
  await server.close()
  fs.rmSync(path.dirname(dbPath), { recursive: true, force: true })
  for (const file of temporary) fs.rmSync(file, { recursive: true, force: true })
})

/** The database file and its WAL (an empty WAL, which a read-only open may create, holds nothing). */
function hash(file: string): string {
  const content = (name: string) => (fs.existsSync(name) ? fs.readFileSync(name) : Buffer.alloc(0))
  return [content(file), content(`${file}-wal`)].map((bytes) => crypto.createHash('sha256').update(bytes).digest('hex')).join(':')
}

/** The rows of the side-by-side table: marker, number, original, re-run. */
function rows(stdout: string) {
  return stdout
    .split('\n')
    .filter((line) => /^[ >*] +\d+  /.test(line))
    .map((line) => {
      const [left, right] = line.split(' │ ')
      return { mark: line[0], number: Number(left.slice(1, 6).trim()), original: left.slice(7).trim(), rerun: right }
    })
}

test('an unchanged turn re-runs against its recorded responses with no difference, no provider call, and the database untouched', async () => {
  const before = hash(dbPath)
  const calls = server.calls
  const { code, stdout, stderr } = await runCli(['rerun', dbPath, turnId])
  expect(stderr).toBe('')
  expect(code).toBe(0)
  expect(stdout).toContain(`re-run of turn ${turnId} against its recorded responses (5 model calls), tools: recorded results`)
  expect(stdout).toContain('idle → step-gate → streaming → tool-running → streaming → retry-waiting → streaming → tool-running → compacting → step-gate → streaming → completed')
  const table = rows(stdout)
  expect(table.length).toBe(14)
  expect(table.every((row) => row.mark === ' ' && row.original === row.rerun)).toBe(true)
  expect(table.map((row) => row.original)).toEqual(expect.arrayContaining(['thinking: I should add.', 'text: The sums are 3 and 7.', 'compaction (automatic)']))
  expect(stdout).toContain('no difference: 14 parts (ids, times and attempt numbers set aside)')
  expect(stdout).toContain('outcome  original: completed   re-run: completed')
  expect(server.calls).toBe(calls)
  expect(hash(dbPath)).toBe(before)
})

test('after the system prompt changes, the first difference is marked: the recorded responses cannot answer step 1', async () => {
  const { code, stdout } = await runCli(['rerun', dbPath, turnId, '--system', 'You are a pirate.'])
  expect(code).toBe(0)
  const table = rows(stdout)
  expect(table[0]).toEqual({ mark: '>', number: 1, original: 'step 1 start (attempt 1)', rerun: '—' })
  expect(table.slice(1).every((row) => row.mark === '*')).toBe(true)
  expect(stdout).toContain('first difference: part 1 (step 1, attempt 1)')
  expect(stdout).toContain(
    're-run: failed (RecordingDivergedError: the run left the recording of turn ' + turnId + ' at step 1, model call 1: the system prompt differs: recorded "You add numbers.", now "You are a pirate.")',
  )
  expect(stdout).toContain('run it against a model with --model <url>')
})

test('--json: the comparison as JSON', async () => {
  const same = JSON.parse((await runCli(['rerun', dbPath, turnId, '--json'])).stdout)
  expect(same).toMatchObject({ turnId, against: 'recorded', tools: 'recorded', identical: true, firstDifference: null, recordedCalls: 5 })
  expect(same.rerun.parts).toHaveLength(14)
  const changed = JSON.parse((await runCli(['rerun', dbPath, turnId, '--json', '--system', 'You are a pirate.'])).stdout)
  expect(changed).toMatchObject({ identical: false, firstDifference: { index: 1, original: { type: 'step-start', step: 1 }, rerun: null } })
  expect(changed.rerun).toMatchObject({ outcome: 'failed', error: { name: 'RecordingDivergedError', step: 1, call: 1 } })
})

test('--model: an eval against another model with the recorded tool results; the first part that differs is marked', async () => {
  const other = await startScriptedServer()
  try {
    other.push({ type: 'stream', chunks: [{ reasoning: 'I should add.' }, { text: 'Adding.' }, { tool: { name: 'add', input: { a: 1, b: 2 }, id: 'call_x' } }], usage: { input: 100, output: 10 } })
    other.text('It is 3.', { usage: { input: 120, output: 4 } })
    const { code, stdout } = await runCli(['rerun', dbPath, turnId, '--model', other.url, '--model-id', 'other-model', '--system', 'Be brief.'])
    expect(code).toBe(0)
    expect(stdout).toContain(`re-run of turn ${turnId} against ${other.url}, tools: recorded results`)
    // The recorded result of add(1, 2), reused for the other model's call of it; the tool is not run.
    expect(other.requests[0].body.messages[0]).toEqual({ role: 'system', content: 'Be brief.' })
    expect(other.requests[1].body.messages.at(-1)).toMatchObject({ role: 'tool', content: '{"sum":3}' })
    const table = rows(stdout)
    const first = table.findIndex((row) => row.mark === '>')
    expect(table.slice(0, first).every((row) => row.mark === ' ')).toBe(true)
    // The original's retry of step 2 shows in its states, not as a difference of parts.
    expect(table[first]).toMatchObject({ number: 7, original: 'text: And 3+4.', rerun: 'text: It is 3.' })
    expect(stdout).toContain('first difference: part 7 (step 2, attempt 2)')
  } finally {
    await other.close()
  }
})

/**
 * A tools module whose `add` answers 100 more than the recording's: inside the repository (tmp/
 * is git-ignored), so the module resolves `ai` from its node_modules.
 */
function offByHundredTools(prefix: string): string {
  fs.mkdirSync(path.join(root, 'tmp'), { recursive: true })
  const dir = fs.mkdtempSync(path.join(root, 'tmp', prefix))
  temporary.push(dir)
  const module = path.join(dir, 'tools.cjs')
  fs.writeFileSync(
    module,
    `const { jsonSchema, tool } = require('ai')
exports.tools = { add: tool({ description: 'Add', inputSchema: jsonSchema({ type: 'object' }), execute: async ({ a, b }) => ({ sum: a + b + 100 }) }) }
`,
  )
  return module
}

test('--tools live runs the tools of --tools-module: another result leaves the recording at step 2, which the output names', async () => {
  const module = offByHundredTools('rerun-tools-')
  const { code, stdout } = await runCli(['rerun', dbPath, turnId, '--tools', 'live', '--tools-module', module])
  expect(code).toBe(0)
  expect(stdout).toContain('tools: run for real')
  const table = rows(stdout)
  expect(table[3]).toMatchObject({ mark: '>', original: 'tool add({"a":1,"b":2}) completed → {"sum":3}', rerun: 'tool add({"a":1,"b":2}) completed → {"sum":103}' })
  expect(stdout).toContain('first difference: part 4 (step 1, attempt 1)')
  expect(stdout).toContain('at step 2, model call 2: message 3 (tool) differs: the result of tool call call_1 (add) differs: recorded {"sum":3}, now {"sum":103}')
})

test('bad arguments exit with status 2; an unknown turn with status 1', async () => {
  const live = await runCli(['rerun', dbPath, turnId, '--tools', 'live'])
  expect(live.code).toBe(2)
  expect(live.stderr).toContain('turnchart: --tools live needs --tools-module <file>')
  const model = await runCli(['rerun', dbPath, turnId, '--model', 'http://127.0.0.1:9/v1'])
  expect(model.code).toBe(2)
  expect(model.stderr).toContain('turnchart: --model needs a model id: --model-id <id> or TURNCHART_MODEL')
  const unknown = await runCli(['rerun', dbPath, 'trn_missing'])
  expect(unknown.code).toBe(1)
  expect(unknown.stderr).toBe(`turnchart: no turn trn_missing in ${dbPath}\n`)
})

test('--model: a call with another input than the recorded one (under the recorded call id) gets no recorded result', async () => {
  const other = await startScriptedServer()
  try {
    // The other model reuses the id `call_1` for add(5, 5): the recorded result of add(1, 2) is not its answer.
    other.push({ type: 'stream', chunks: [{ tool: { name: 'add', input: { a: 5, b: 5 }, id: 'call_1' } }], usage: { input: 100, output: 10 } })
    other.text('Done.', { usage: { input: 120, output: 4 } })
    const { code, stdout } = await runCli(['rerun', dbPath, turnId, '--model', other.url, '--model-id', 'other-model', '--json'])
    expect(code).toBe(0)
    const result = JSON.parse(stdout)
    const call = result.rerun.parts.find((p: { type: string }) => p.type === 'tool')
    expect(call.state).toMatchObject({ status: 'error', input: { a: 5, b: 5 }, error: expect.stringContaining('no recorded result for add({"a":5,"b":5})') })
    expect(JSON.stringify(other.requests[1].body.messages.at(-1))).not.toContain('"sum":3')
  } finally {
    await other.close()
  }
})

test('--out: the new database is named with the session to show; a file that exists is refused by its flag', async () => {
  const dir = fs.mkdtempSync(path.join(require('node:os').tmpdir(), 'rerun-out-'))
  temporary.push(dir)
  const out = path.join(dir, 'rerun.db')
  const kept = await runCli(['rerun', dbPath, turnId, '--out', out])
  expect(kept.code).toBe(0)
  const sessionId = /turnchart show \S+ (ses_\w+)/.exec(kept.stdout)?.[1]
  expect(kept.stdout).toContain(`the re-run is kept in ${out}: turnchart show ${out} ${sessionId}`)
  const shown = await runCli(['show', out, sessionId!])
  expect(shown).toMatchObject({ code: 0, stderr: '' })
  expect(shown.stdout).toContain('The sums are 3 and 7.')
  const again = await runCli(['rerun', dbPath, turnId, '--out', out])
  expect(again).toMatchObject({ code: 1, stdout: '' })
  expect(again.stderr).toBe(`turnchart: --out ${out} exists: name a file that does not exist yet (the re-run's database is created there)\n`)
  const folder = await runCli(['rerun', dbPath, turnId, '--out', path.join(dir, 'missing', 'x.db')])
  expect(folder.code).toBe(1)
  expect(folder.stderr).toMatch(/^turnchart: invalid --out: expected a file path in an existing folder/)
})

test('a turn whose log was pruned: rerun says so, as show and replay do', async () => {
  const dir = fs.mkdtempSync(path.join(require('node:os').tmpdir(), 'rerun-pruned-'))
  temporary.push(dir)
  const copy = path.join(dir, 'copy.db')
  fs.copyFileSync(dbPath, copy)
  if (fs.existsSync(`${dbPath}-wal`)) fs.copyFileSync(`${dbPath}-wal`, `${copy}-wal`)
  expect((await runCli(['prune', copy, '--older-than', '0ms'])).code).toBe(0)
  const run = await runCli(['rerun', copy, turnId])
  expect(run).toMatchObject({ code: 1, stdout: '' })
  expect(run.stderr).toMatch(new RegExp(`^turnchart: the transition log of turn ${turnId} was pruned \\(turnchart prune\\): its model calls cannot be re-run; its messages and parts remain: turnchart show ${copy} ses_`))
})

test('--tools live --tool-drift continue --steps: the recorded responses go on past the changed results, each reported, the steps side by side', async () => {
  const module = offByHundredTools('rerun-drift-')
  const calls = server.calls
  const { code, stdout, stderr } = await runCli(['rerun', dbPath, turnId, '--tools', 'live', '--tools-module', module, '--tool-drift', 'continue', '--steps'])
  expect(stderr).toBe('')
  expect(code).toBe(0)
  expect(stdout).toContain('tool drift, step 1: add({"a":1,"b":2}) recorded {"sum":3}, live {"sum":103}')
  expect(stdout).toContain('tool drift, step 2: add({"a":3,"b":4}) recorded {"sum":7}, live {"sum":107}')
  const marked = stdout.split('\n').filter((line) => line.startsWith('>'))
  expect(marked).toEqual([expect.stringMatching(/^> {3}add\(\{"a":1,"b":2\}\) → \{"sum":3\} +│ {3}add\(\{"a":1,"b":2\}\) → \{"sum":103\}$/)])
  expect(stdout).toContain('first difference: step 1: the result of add (call 1)')
  expect(stdout).toMatch(/ {2}outcome: completed +│ outcome: completed/)
  expect(server.calls).toBe(calls)
})

test('--after-divergence live: the recorded responses, then --model from the divergence on', async () => {
  const other = await startScriptedServer()
  try {
    other.text('Brief: 3 and 7.', { usage: { input: 30, output: 5 } })
    const { code, stdout } = await runCli(['rerun', dbPath, turnId, '--system', 'Be brief.', '--after-divergence', 'live', '--model', other.url, '--model-id', 'other-model', '--steps'])
    expect(code).toBe(0)
    expect(stdout).toContain(`against its recorded responses, then ${other.url} past a divergence`)
    expect(stdout).toContain('diverged at model call 1 (step 1): the system prompt differs')
    expect(stdout).toMatch(/text: Brief: 3 and 7\./)
    expect(stdout).toMatch(/outcome: completed +│ outcome: completed/)
    expect(other.calls).toBe(1)
  } finally {
    await other.close()
  }
  const bad = await runCli(['rerun', dbPath, turnId, '--after-divergence', 'live'])
  expect(bad.code).toBe(2)
  expect(bad.stderr).toContain('--after-divergence live needs --model <url>')
})

test('turnchart diff <db> <turnA> <turnB>: two stored turns step by step; the same turn has no difference; an unknown turn exits 1', async () => {
  const same = await runCli(['diff', dbPath, turnId, turnId])
  expect(same.code).toBe(0)
  expect(same.stdout).toContain('no difference: 3 steps')
  expect(same.stdout).toContain('add({"a":3,"b":4}) → {"sum":7}')
  const json = await runCli(['diff', dbPath, turnId, turnId, '--json', '--ignore', 'usage'])
  expect(JSON.parse(json.stdout)).toMatchObject({ a: { turnId, finalText: 'The sums are 3 and 7.' }, diff: { same: true, first: null } })
  const unknown = await runCli(['diff', dbPath, turnId, 'trn_nope'])
  expect(unknown.code).toBe(1)
  expect(unknown.stderr).toContain('no turn trn_nope')
  expect((await runCli(['diff', dbPath, turnId, turnId, '--ignore', 'colour'])).code).toBe(2)
})
