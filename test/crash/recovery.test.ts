/**
 * Crash tests: a real child process runs a turn and is SIGKILLed in each state; a fresh engine
 * on the same SQLite file recovers the turn. Nothing flushed before the kill is lost, no part
 * is left open, the turn ends completed (resume) or aborted (abort policy), and the log shows
 * the crash and the recovery.
 */
import { type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { forkNode } from '../support/compiled'
import { createEngine, type Engine, type Part, type ToolPart } from '../../src'
import { startScriptedServer, type ScriptedServer } from '../../src/testing'
import { modelFor, tempDbPath } from '../support/harness'
import { waitingCall } from '../support/waiting-call'
import { childTools } from './child-tools'
import { recoveryEdges } from './recovery-edges'
import { CoverageRecorder } from '../model/support/coverage'
import { edgeOf } from '../model/support/chart-model'
import { turnMachine } from '../../machines/turn.machine'
import { initialTransition, transition } from 'xstate'

jest.setTimeout(30_000)

const coverage = new CoverageRecorder(__filename)
afterAll(() => coverage.write())

/** Records the edges the turn's persisted log took (replayed on the real machine). */
async function recordEdges(engine: Engine, turnId: string): Promise<void> {
  const Database = require('better-sqlite3')
  const db = new Database(dbPath, { readonly: true })
  const row = db.prepare('select input from turnchart_turns where id = ?').get(turnId) as { input: string } | undefined
  db.close()
  if (!row) return
  let [snapshot] = initialTransition(turnMachine, JSON.parse(row.input))
  const edges: string[] = []
  for (const row of await engine.transitions(turnId)) {
    const event = { ...row.payload, type: row.event }
    const edge = edgeOf(snapshot, event)
    if (edge) edges.push(edge)
    ;[snapshot] = transition(turnMachine, snapshot, event as never)
  }
  coverage.record(expect.getState().currentTestName ?? 'crash test', edges)
}

let server: ScriptedServer
let dbPath: string
let engines: Engine[] = []
beforeEach(async () => {
  server = await startScriptedServer()
  dbPath = tempDbPath()
})
let recovered: Array<{ engine: Engine; turnId: string }> = []
afterEach(async () => {
  for (const { engine, turnId } of recovered) await recordEdges(engine, turnId)
  recovered = []
  for (const engine of engines) await engine.close()
  engines = []
  await server.close()
  fs.rmSync(path.dirname(dbPath), { recursive: true, force: true })
})

interface ChildRun {
  child: ChildProcess
  sessionId: string
  turnId: string
}

/** Starts the child and resolves once `until` says the moment to kill has come. */
function runChild(until: (message: { type: string; to?: string; delta?: string }) => boolean): Promise<ChildRun> {
  return new Promise((resolve, reject) => {
    const child = forkNode(path.join(__dirname, 'crash-child.ts'), [dbPath, server.url], {
      env: { ...process.env, TURNCHART_CHILD: '1' },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    })
    let sessionId = ''
    let turnId = ''
    child.on('message', (message: { type: string; sessionId?: string; turnId?: string; to?: string }) => {
      if (message.type === 'session') sessionId = message.sessionId!
      if (message.turnId) turnId = message.turnId
      if (until(message)) resolve({ child, sessionId, turnId })
    })
    child.on('exit', (code) => reject(new Error(`child exited early with ${code}`)))
  })
}

async function kill(run: ChildRun): Promise<void> {
  run.child.removeAllListeners('exit')
  const exited = new Promise((resolve) => run.child.once('exit', resolve))
  run.child.kill('SIGKILL')
  await exited
}

async function recover(policy: 'resume' | 'abort' = 'resume') {
  const engine = await createEngine({ database: dbPath, model: modelFor(server), tools: childTools, retry: { jitter: 0 }, recovery: { policy, onOpen: false } })
  engines.push(engine)
  const turns = await engine.recover()
  for (const turn of turns) recovered.push({ engine, turnId: turn.id })
  return { engine, turns }
}

function openParts(parts: Part[]): Part[] {
  return parts.filter(
    (p) =>
      ((p.type === 'text' || p.type === 'reasoning') && p.time.end === undefined) ||
      (p.type === 'tool' && (p.state.status === 'pending' || p.state.status === 'running')),
  )
}

async function allParts(engine: Engine, sessionId: string): Promise<Part[]> {
  return (await engine.messages(sessionId)).flatMap((m) => m.parts)
}

/** Polls the database (the child's flushes) until `check` holds: the kill must come after. */
async function untilStored(check: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!check()) {
    if (Date.now() > deadline) throw new Error('the child never flushed what the test waits for')
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

function storedText(): string {
  const Database = require('better-sqlite3')
  const db = new Database(dbPath, { readonly: true, fileMustExist: true })
  try {
    const rows = db.prepare("select data from turnchart_parts where type = 'text'").all() as Array<{ data: string }>
    return rows.map((r) => JSON.parse(r.data).text).join('|')
  } finally {
    db.close()
  }
}

test('killed while streaming: flushed text kept and closed, step interrupted, a new step completes the turn', async () => {
  server.push({ type: 'stream', chunks: [{ text: 'partial ' }, { text: 'answer' }], end: 'hang' })
  const run = await runChild((m) => m.type === 'delta' && m.delta === 'answer')
  await untilStored(() => storedText().includes('partial answer'))
  await kill(run)

  server.text('resumed')
  const { engine, turns } = await recover()
  expect(turns.map((t) => t.id)).toEqual([run.turnId])
  expect((await turns[0].done).outcome).toBe('completed')

  const parts = await allParts(engine, run.sessionId)
  expect(openParts(parts)).toEqual([])
  const texts = parts.filter((p) => p.type === 'text').map((p) => (p as { text: string }).text)
  expect(texts).toEqual(['do the work', 'partial answer', 'resumed'])
  expect(parts.find((p) => p.type === 'step-finish' && p.reason === 'interrupted')).toMatchObject({ step: 1 })
  const log = await engine.transitions(run.turnId)
  expect(log.map((t) => `${t.from}>${t.event}>${t.to}`)).toEqual([
    'idle>turn.start>step-gate',
    'step-gate>gate.continue>streaming',
    'streaming>turn.crashed>interrupted',
    'interrupted>turn.recover>step-gate',
    'step-gate>gate.continue>streaming',
    'streaming>step.finished>completed',
  ])
  expect((await engine.replay(run.turnId)).map((s) => s.state)).toEqual(['step-gate', 'streaming', 'interrupted', 'step-gate', 'streaming', 'completed'])
})

test('killed while streaming with policy abort: the turn ends aborted, parts closed', async () => {
  server.push({ type: 'stream', chunks: [{ text: 'half' }], end: 'hang' })
  const run = await runChild((m) => m.type === 'delta')
  await untilStored(() => storedText().includes('half'))
  await kill(run)

  const { engine, turns } = await recover('abort')
  const result = await turns[0].done
  expect(result.outcome).toBe('aborted')
  const [, assistant] = await engine.messages(run.sessionId)
  expect(assistant.info.error?.name).toBe('MessageAbortedError')
  expect(openParts(assistant.parts)).toEqual([])
  expect(assistant.parts.find((p) => p.type === 'text')).toMatchObject({ text: 'half' })
  expect((await engine.transitions(run.turnId)).slice(-2).map((t) => t.event)).toEqual(['turn.crashed', 'turn.abort'])
  expect(server.calls).toBe(1)
})

test('killed while a tool runs: the call is in doubt, the model is not called until resolveCall says what happened', async () => {
  server.tool('deploy', { env: 'prod' })
  const run = await runChild((m) => m.type === 'transition' && m.to === 'tool-running')
  await kill(run)

  server.text('the deploy went through')
  const { engine, turns } = await recover()
  await waitingCall(turns[0])
  expect(await engine.getTurn(run.turnId)).toMatchObject({ state: 'call-in-doubt', outcome: null })
  const call = (await allParts(engine, run.sessionId)).find((p): p is ToolPart => p.type === 'tool')!
  expect(call.state).toMatchObject({ status: 'in-doubt', reason: 'restart', execution: 1 })
  expect(server.calls).toBe(1)
  await engine.resolveCall(run.turnId, call.callId, { output: 'deployed to prod (checked by hand)' })
  expect((await turns[0].done).outcome).toBe('completed')
  const parts = await allParts(engine, run.sessionId)
  expect(openParts(parts)).toEqual([])
  const sent = server.requests[1].body.messages
  expect(sent.find((m: { role: string }) => m.role === 'tool')).toMatchObject({ content: 'deployed to prod (checked by hand)' })
  expect((await engine.transitions(run.turnId)).map((t) => t.to)).toEqual(['step-gate', 'streaming', 'tool-running', 'interrupted', 'tool-running', 'call-in-doubt', 'tool-running', 'streaming', 'completed'])
})

test('killed while an idempotent tool runs: recovery runs it again', async () => {
  server.tool('read', { path: 'a.txt' })
  const run = await runChild((m) => m.type === 'transition' && m.to === 'tool-running')
  await kill(run)

  server.text('read it')
  const { engine, turns } = await recover()
  expect((await turns[0].done).outcome).toBe('completed')
  const call = (await allParts(engine, run.sessionId)).find((p): p is ToolPart => p.type === 'tool')!
  expect(call.state).toMatchObject({ status: 'completed', output: 'contents of a.txt' })
})

test('killed while waiting to retry: the wait resumes until the persisted deadline', async () => {
  server.error(503, { error: { message: 'overloaded' } }, { 'retry-after-ms': '1500' })
  const run = await runChild((m) => m.type === 'transition' && m.to === 'retry-waiting')
  await kill(run)

  server.text('after the wait')
  const { engine, turns } = await recover()
  const record = await engine.getTurn(run.turnId)
  expect(record?.state).toBe('retry-waiting')
  const delay = turns[0].actor.getSnapshot().context.retryDelayMs
  expect(delay).toBeGreaterThan(0)
  expect(delay).toBeLessThan(1500)
  const retryAt = record!.retryAt!
  await server.waitForCall(2)
  expect(Date.now()).toBeGreaterThanOrEqual(retryAt - 5)
  expect((await turns[0].done).outcome).toBe('completed')
  expect((await engine.transitions(run.turnId)).map((t) => t.to)).toEqual(['step-gate', 'streaming', 'retry-waiting', 'interrupted', 'retry-waiting', 'streaming', 'completed'])
})

test('killed while compacting: the compaction restarts', async () => {
  server.error(400, { error: { code: 'context_length_exceeded', message: 'too long' } })
  server.hang()
  const run = await runChild((m) => m.type === 'transition' && m.to === 'compacting')
  await server.waitForCall(2)
  await kill(run)

  server.text('the summary')
  server.text('continued')
  const { engine, turns } = await recover()
  expect((await turns[0].done).outcome).toBe('completed')
  const messages = await engine.messages(run.sessionId)
  expect(messages.filter((m) => m.info.summary)).toHaveLength(1)
  expect(openParts(messages.flatMap((m) => m.parts))).toEqual([])
  expect((await engine.transitions(run.turnId)).map((t) => t.to)).toEqual(['step-gate', 'streaming', 'compacting', 'interrupted', 'compacting', 'step-gate', 'streaming', 'completed'])
})

test('two engines opening the file at once, in two processes: the turn is claimed by exactly one', async () => {
  server.push({ type: 'stream', chunks: [{ text: 'x' }], end: 'hang' })
  const run = await runChild((m) => m.type === 'delta')
  await kill(run)

  server.text('one')
  server.text('two')
  const open = () =>
    new Promise<{ recovered: boolean; outcome: string | null }>((resolve, reject) => {
      const child = forkNode(path.join(__dirname, 'recover-child.ts'), [dbPath, server.url, run.sessionId], {
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      })
      child.on('message', (m: { type: string; recovered: boolean; outcome: string | null }) => resolve(m))
      child.on('exit', (code) => code !== 0 && reject(new Error(`recover child exited with ${code}`)))
    })
  const results = await Promise.all([open(), open()])
  expect(results.filter((r) => r.recovered)).toEqual([{ type: 'result', recovered: true, outcome: 'completed' }])
  const engine = await createEngine({ database: dbPath, model: modelFor(server), recovery: { onOpen: false } })
  engines.push(engine)
  expect((await engine.transitions(run.turnId)).filter((t) => t.event === 'turn.recover')).toHaveLength(1)
  expect(server.calls).toBe(2)
})

test('a live engine keeps its turn: another engine does not take it over', async () => {
  const first = await createEngine({ database: dbPath, model: modelFor(server) })
  engines.push(first)
  server.hang()
  const session = await first.createSession()
  const turn = first.prompt(session.id, 'x')
  await server.waitForCall(1)
  const second = await createEngine({ database: dbPath, model: modelFor(server) })
  engines.push(second)
  expect(await second.recover()).toEqual([])
  expect(() => first.prompt(session.id, 'y')).toThrow(/busy/)
  await expect(second.prompt(session.id, 'from another engine').done).rejects.toMatchObject({ name: 'SessionBusyError', turnId: turn.id })
  turn.abort()
  await turn.done
})

test('every recovery edge of the chart was taken by a test above', () => {
  const covered = coverage.covered()
  expect(recoveryEdges.filter((edge) => !covered.has(edge))).toEqual([])
})

test('a turn whose log cannot be replayed does not block the engine: it ends failed, its parts closed', async () => {
  server.push({ type: 'stream', chunks: [{ text: 'half' }], end: 'hang' })
  const run = await runChild((m) => m.type === 'delta')
  await untilStored(() => storedText().includes('half'))
  await kill(run)
  const Database = require('better-sqlite3')
  const raw = new Database(dbPath)
  raw.prepare('delete from turnchart_transitions where turn_id = ? and seq = 1').run(run.turnId) // a hand-edited log
  raw.close()

  const engine = await createEngine({ database: dbPath, model: modelFor(server), tools: childTools })
  engines.push(engine)
  const turn = await engine.getTurn(run.turnId)
  expect(turn).toMatchObject({ state: 'failed', outcome: 'failed', error: { name: 'ReplayMismatchError' } })
  const [, assistant] = await engine.messages(run.sessionId)
  expect(assistant.info.error?.name).toBe('ReplayMismatchError')
  expect(openParts(assistant.parts)).toEqual([])
  expect(assistant.parts.find((p) => p.type === 'text')).toMatchObject({ text: 'half' })
  server.text('the session works again')
  expect((await engine.prompt(run.sessionId, 'next').done).outcome).toBe('completed')
})
