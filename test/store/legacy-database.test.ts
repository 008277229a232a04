/**
 * Databases of today keep working: test/fixtures/legacy/v0.1-open-turns.db was written by
 * turnchart 0.1 (commit 7977f18, by make-open-turns-db.ts beside it) with three turns left open
 * by a SIGKILL (`streaming`, `tool-running`, `awaiting-approval`) and one completed turn before
 * them. A copy of it opens in this version: the migrations run, the earlier history reads, each
 * open turn resumes per the recovery rules (docs/durability.md) and completes, and every turn's
 * log replays. See test/fixtures/legacy/README.md for what the file holds.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { tool } from 'ai'
import { z } from 'zod'
import { createEngine, idempotent, type Engine, type Part, type ToolPart } from '../../src'
import { migrations } from '../../src/store/migrations'
import { startScriptedServer, type ScriptedServer } from '../../src/testing'
import { recordEvents, type EventLog } from '../support/event-log'
import { modelFor, sqliteOnly } from '../support/harness'

jest.setTimeout(30_000)

const fixtureFile = path.join(__dirname, '../fixtures/legacy/v0.1-open-turns.db')

/** What the fixture holds (README.md beside it). */
const fixture = {
  history: { sessionId: 'ses_legacy_streaming', turnId: 'trn_01M8RSR03WK7361ZGGXP8H0HF5' },
  streaming: { sessionId: 'ses_legacy_streaming', turnId: 'trn_01M8RSR07J1WZS0VVS647GW1XZ' },
  toolRunning: { sessionId: 'ses_legacy_tool_running', turnId: 'trn_01M8RSR2RY219XAW86HW2BQ9NR' },
  awaitingApproval: { sessionId: 'ses_legacy_awaiting_approval', turnId: 'trn_01M8RSR5AE29QRFK1YBSCQPYYY' },
}
const resumedAnswer = 'Resumed after the restart.'

let dir: string
let database: string
let server: ScriptedServer
let engine: Engine | undefined
let log: EventLog
const lookups: unknown[] = []
const deploys: unknown[] = []

/** The fixture's tools, as a later version registers them: `lookup` now returns at once. */
const tools = {
  lookup: idempotent(
    tool({
      description: 'Look up an order',
      inputSchema: z.object({ orderId: z.string() }),
      execute: async (input) => {
        lookups.push(input)
        return `order ${input.orderId}: shipped`
      },
    }),
  ),
  deploy: tool({
    description: 'Deploy the application',
    inputSchema: z.object({ env: z.string() }),
    needsApproval: true,
    execute: async (input) => {
      deploys.push(input)
      return `deployed to ${input.env}`
    },
  }),
}

beforeEach(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'turnchart-legacy-'))
  database = path.join(dir, 'legacy.db')
  fs.copyFileSync(fixtureFile, database)
  server = await startScriptedServer()
  lookups.length = 0
  deploys.length = 0
})

afterEach(async () => {
  await engine?.close()
  engine = undefined
  await server.close()
  fs.rmSync(dir, { recursive: true, force: true })
})

function openParts(parts: Part[]): Part[] {
  return parts.filter(
    (p) =>
      ((p.type === 'text' || p.type === 'reasoning') && p.time.end === undefined) ||
      (p.type === 'tool' && (p.state.status === 'pending' || p.state.status === 'running')),
  )
}

async function turnParts(sessionId: string, turnId: string): Promise<Part[]> {
  const messages = await engine!.messages(sessionId)
  return messages.filter((m) => m.info.turnId === turnId && m.info.role === 'assistant').flatMap((m) => m.parts)
}

async function logOf(turnId: string): Promise<string[]> {
  return (await engine!.transitions(turnId)).map((t) => `${t.from} --${t.event}--> ${t.to}`)
}

/** The text of the messages a model request sent (any role), to tell the resumed requests apart. */
function requestText(body: { messages: Array<{ content: unknown }> }): string {
  return JSON.stringify(body.messages)
}

sqliteOnly('a database of 0.1 with turns open after a crash migrates on open and its turns resume', async () => {
  // The two turns that resume at once (streaming, tool-running) each make one model request,
  // in either order; the approved one makes a third. The same answer for all three.
  server.text(resumedAnswer).text(resumedAnswer).text(resumedAnswer)

  // The file as 0.1 leaves it: one file (copied alone here), in WAL mode (header bytes 18-19 are 2).
  const header = fs.readFileSync(database).subarray(0, 20)
  expect(header.subarray(0, 16).toString('latin1')).toBe('SQLite format 3\0')
  expect([header[18], header[19]]).toEqual([2, 2])

  // Opening migrates the file and recovers the open turns (recovery.onOpen, the default).
  engine = await createEngine({ database, model: modelFor(server), tools, retry: { jitter: 0 } })
  log = recordEvents(engine)

  // The migration ran: every migration of this version is recorded in the file, and 0.1's
  // transition log (a rowid table) was rebuilt as one stored by its key, its rows kept.
  {
    const Database = require('better-sqlite3')
    const raw = new Database(database, { readonly: true })
    const applied = (raw.prepare('select name from turnchart_migrations order by name').all() as Array<{ name: string }>).map((r) => r.name)
    const table = raw.prepare("select sql from sqlite_master where name = 'turnchart_transitions'").get() as { sql: string }
    const logOf = (db: { prepare(sql: string): { all(): unknown[] } }) => db.prepare('select turn_id, seq, from_state, event_type, payload, to_state, at from turnchart_transitions order by turn_id, seq').all() as Array<{ turn_id: string; seq: number }>
    const logged = logOf(raw)
    raw.close()
    const original = new Database(fixtureFile, { readonly: true })
    const written = logOf(original)
    original.close()
    expect(applied).toEqual(migrations.map((m) => m.name))
    expect(table.sql).toMatch(/without rowid$/i)
    // (recovery has appended the resumed turns' rows since: 0.1's rows are there as written)
    expect(written).toHaveLength(7)
    expect(logged.filter((row) => written.some((w) => w.turn_id === row.turn_id && w.seq === row.seq))).toEqual(written)
  }

  // Every open turn was taken over by this engine on open.
  const streaming = engine.activeTurn(fixture.streaming.sessionId)
  const toolRunning = engine.activeTurn(fixture.toolRunning.sessionId)
  const awaiting = engine.activeTurn(fixture.awaitingApproval.sessionId)
  expect([streaming?.id, toolRunning?.id, awaiting?.id]).toEqual([fixture.streaming.turnId, fixture.toolRunning.turnId, fixture.awaitingApproval.turnId])

  // The turn killed while streaming: the flushed text is kept and closed, the step is marked
  // interrupted, and a new step (which sees the history and the text) completes the turn.
  expect((await streaming!.done).outcome).toBe('completed')
  {
    const parts = await turnParts(fixture.streaming.sessionId, fixture.streaming.turnId)
    expect(openParts(parts)).toEqual([])
    expect(parts.filter((p) => p.type === 'text').map((p) => (p as { text: string }).text)).toEqual(['Day one: the Louvre. ', resumedAnswer])
    expect(parts.find((p) => p.type === 'step-finish' && p.reason === 'interrupted')).toMatchObject({ step: 1 })
    expect(await logOf(fixture.streaming.turnId)).toEqual([
      'idle --turn.start--> streaming',
      'streaming --turn.crashed--> interrupted',
      'interrupted --turn.recover--> step-gate',
      'step-gate --gate.continue--> streaming',
      'streaming --step.finished--> completed',
    ])
    const request = server.requests.find((r) => requestText(r.body).includes('Plan the trip to Paris.'))!
    expect(requestText(request.body)).toContain('What is the capital of France?')
    expect(requestText(request.body)).toContain('The capital of France is Paris.')
    expect(requestText(request.body)).toContain('Day one: the Louvre.')
  }

  // The turn killed while its idempotent `lookup` ran: the tool runs again with its stored
  // input, and the model gets its result.
  expect((await toolRunning!.done).outcome).toBe('completed')
  {
    expect(lookups).toEqual([{ orderId: 'A-1001' }])
    const parts = await turnParts(fixture.toolRunning.sessionId, fixture.toolRunning.turnId)
    expect(openParts(parts)).toEqual([])
    const call = parts.find((p): p is ToolPart => p.type === 'tool')!
    expect(call).toMatchObject({ callId: 'call_lookup', tool: 'lookup' })
    expect(call.state).toMatchObject({ status: 'completed', input: { orderId: 'A-1001' }, output: 'order A-1001: shipped' })
    expect((await engine.transitions(fixture.toolRunning.turnId)).map((t) => t.to)).toEqual(['streaming', 'tool-running', 'interrupted', 'tool-running', 'streaming', 'completed'])
    const request = server.requests.find((r) => requestText(r.body).includes('Look up order A-1001.'))!
    expect(requestText(request.body)).toContain('order A-1001: shipped')
  }

  // The turn killed while awaiting approval goes on waiting, in this engine: nothing ran.
  expect(await engine.readStatus(fixture.awaitingApproval.sessionId)).toMatchObject({
    type: 'busy',
    turnId: fixture.awaitingApproval.turnId,
    state: 'awaiting-approval',
    approvals: [{ callId: 'call_deploy', tool: 'deploy', input: { env: 'staging' } }],
  })
  expect((await engine.getTurn(fixture.awaitingApproval.turnId))?.state).toBe('awaiting-approval')
  expect(deploys).toEqual([])
  expect(server.calls).toBe(2)
  // Approving it runs `deploy` once and completes the turn.
  const completed = log.waitFor((e) => e.type === 'turn.transition' && e.turnId === fixture.awaitingApproval.turnId && e.to === 'completed')
  await engine.approve(fixture.awaitingApproval.turnId, 'call_deploy')
  await completed
  expect((await awaiting!.done).outcome).toBe('completed')
  {
    expect(deploys).toEqual([{ env: 'staging' }])
    const parts = await turnParts(fixture.awaitingApproval.sessionId, fixture.awaitingApproval.turnId)
    expect(openParts(parts)).toEqual([])
    const call = parts.find((p): p is ToolPart => p.type === 'tool')!
    expect(call).toMatchObject({ callId: 'call_deploy', tool: 'deploy' })
    expect(call.state).toMatchObject({ status: 'completed', input: { env: 'staging' }, output: 'deployed to staging' })
    expect(parts.filter((p) => p.type === 'text').map((p) => (p as { text: string }).text)).toEqual([resumedAnswer])
    // Nothing was in flight when it was killed: no crash row, the approval goes on from the row of 0.1.
    expect(await logOf(fixture.awaitingApproval.turnId)).toEqual([
      'idle --turn.start--> streaming',
      'streaming --step.finished--> awaiting-approval',
      'awaiting-approval --tool.approved--> tool-running',
      'tool-running --gate.continue--> streaming',
      'streaming --step.finished--> completed',
    ])
  }
  expect(server.calls).toBe(3)

  // The earlier completed turn and its messages still read as they were written.
  const history = await engine.messages(fixture.history.sessionId)
  expect(history.slice(0, 2).map((m) => [m.info.role, m.info.turnId, m.parts.filter((p) => p.type === 'text').map((p) => (p as { text: string }).text)])).toEqual([
    ['user', fixture.history.turnId, ['What is the capital of France?']],
    ['assistant', fixture.history.turnId, ['The capital of France is Paris.']],
  ])
  expect(await engine.getTurn(fixture.history.turnId)).toMatchObject({ state: 'completed', outcome: 'completed' })
  expect(await logOf(fixture.history.turnId)).toEqual(['idle --turn.start--> streaming', 'streaming --step.finished--> completed'])

  // Every turn's log replays through the chart, to the state its row holds; nothing is left open.
  for (const { sessionId, turnId } of Object.values(fixture)) {
    const steps = await engine.replay(turnId)
    expect(steps.at(-1)?.state).toBe('completed')
    expect(await engine.getTurn(turnId)).toMatchObject({ state: 'completed', outcome: 'completed' })
    expect(openParts(await turnParts(sessionId, turnId))).toEqual([])
    expect(engine.activeTurn(sessionId)).toBeUndefined()
  }

  // And the sessions take new prompts.
  server.text('Still here.')
  expect((await engine.prompt(fixture.toolRunning.sessionId, 'Anything else?').done).outcome).toBe('completed')
})
