/**
 * Calls in doubt and deferred calls across a SIGKILL, on SQLite and PostgreSQL: a real child
 * process runs the turn and dies; other engines on the database settle the wait.
 * - killed inside a non-idempotent tool: the call is in doubt, the model is not called; a
 *   `resolveCall` from a second engine (the first one recovered the turn) completes the turn;
 * - killed while a deferred call waits: a second engine hands the result in and the turn completes;
 * - a deferred call's stored deadline passes while no engine runs it: the next engine gives the
 *   model an error.
 */
import fs from 'node:fs'
import path from 'node:path'
import { runUntilKilled } from '../support/child-process'
import { createEngine, type Engine, type ToolPart } from '../../src'
import { startScriptedServer, type ScriptedServer } from '../../src/testing'
import { dropSchemas, freshSchemaName, modelFor, pgBaseUrl, tempDbPath, withParams } from '../support/harness'
import { testOn } from '../support/requires'
import { waitingCall } from '../support/waiting-call'
import { doubtTools } from './calls-in-doubt-child'

jest.setTimeout(60_000)

let server: ScriptedServer
const engines: Engine[] = []
beforeEach(async () => {
  server = await startScriptedServer()
})
afterEach(async () => {
  for (const engine of engines.splice(0)) await engine.close()
  await server.close()
})

function database(dialect: 'sqlite' | 'postgres'): { url: string; drop(): Promise<void> } {
  if (dialect === 'postgres') {
    const schema = freshSchemaName()
    return { url: withParams(pgBaseUrl, { schema }), drop: () => dropSchemas(schema) }
  }
  const file = tempDbPath()
  return { url: file, drop: async () => fs.rmSync(path.dirname(file), { recursive: true, force: true }) }
}

function runChildUntilKilled(url: string, point: string, timeoutMs?: number): Promise<void> {
  return runUntilKilled(path.join(__dirname, 'calls-in-doubt-child.ts'), [url, server.url, point, ...(timeoutMs ? [String(timeoutMs)] : [])], point)
}

async function open(url: string, ciTimeoutMs?: number): Promise<Engine> {
  const engine = await createEngine({ database: url, model: modelFor(server), tools: doubtTools(undefined, ciTimeoutMs), recovery: { onOpen: false, intervalMs: 0 }, controlPollIntervalMs: 50 })
  engines.push(engine)
  return engine
}

const toolPart = async (engine: Engine, turnId: string) => {
  const turn = (await engine.getTurn(turnId))!
  return (await engine.messages(turn.sessionId)).flatMap((m) => m.parts).find((p): p is ToolPart => p.type === 'tool')!
}

for (const dialect of ['sqlite', 'postgres'] as const) {
  testOn(dialect)(`${dialect}: killed inside a non-idempotent tool, the call is in doubt; resolveCall from a second engine completes the turn`, async () => {
    const db = database(dialect)
    try {
      server.tool('charge', { cents: 500 })
      await runChildUntilKilled(db.url, 'in-charge')
      server.text('charged, as the ledger says')
      const first = await open(db.url)
      const [turn] = await first.recover()
      const call = await waitingCall(turn)
      expect(call).toMatchObject({ tool: 'charge', status: 'in-doubt', reason: 'restart' })
      expect(await first.getTurn(turn.id)).toMatchObject({ state: 'call-in-doubt', outcome: null })
      expect(server.calls).toBe(1) // the model has not been called again
      const second = await open(db.url)
      expect(await second.readStatus(turn.sessionId)).toMatchObject({ type: 'busy', state: 'call-in-doubt', calls: [{ callId: call.callId, status: 'in-doubt' }] })
      await second.resolveCall(turn.id, call.callId, { output: 'charged 500 (seen in the ledger)' })
      expect((await turn.done).outcome).toBe('completed')
      expect((await toolPart(second, turn.id)).state).toMatchObject({ status: 'completed', output: 'charged 500 (seen in the ledger)' })
    } finally {
      await db.drop()
    }
  })

  testOn(dialect)(`${dialect}: killed while a deferred call waits, a second engine hands its result in and the turn completes`, async () => {
    const db = database(dialect)
    try {
      server.tool('ci', {})
      await runChildUntilKilled(db.url, 'deferred')
      server.text('CI passed.')
      const second = await open(db.url)
      const turnId = (await openTurnOf(second))!
      const part = await toolPart(second, turnId)
      expect(part.state).toMatchObject({ status: 'deferred' })
      await second.resolveCall(turnId, part.callId, { output: { status: 'passed' } })
      const done = await waitForOutcome(second, turnId)
      expect(done).toBe('completed')
      expect((await toolPart(second, turnId)).state).toMatchObject({ status: 'completed', output: { status: 'passed' } })
    } finally {
      await db.drop()
    }
  })

  testOn(dialect)(`${dialect}: a deferred call's stored deadline passes while its engine is dead: the next engine gives the model an error`, async () => {
    const db = database(dialect)
    try {
      server.tool('ci', {})
      await runChildUntilKilled(db.url, 'deferred', 200)
      server.text('CI did not answer in time.')
      const next = await open(db.url, 200)
      const turnId = (await openTurnOf(next))!
      expect((await next.getTurn(turnId))!.retryAt).toEqual(expect.any(Number))
      // Taken over by this call, or already by the engine's deadline timer (armed at open for the
      // stored deadline, which has passed): either way the turn goes on here.
      await next.recover()
      expect(await endOf(next, turnId)).toBe('completed')
      expect((await toolPart(next, turnId)).state).toMatchObject({ status: 'error', error: expect.stringContaining('did not arrive before its deadline') })
      expect(JSON.stringify(server.requests.at(-1)!.body.messages)).toContain('did not arrive before its deadline')
    } finally {
      await db.drop()
    }
  })
}

/** The one open turn of the database's one session. */
async function openTurnOf(engine: Engine): Promise<string | undefined> {
  const [session] = await engine.listSessions()
  const status = await engine.readStatus(session.id)
  return status.type === 'idle' ? undefined : status.turnId
}

/** The turn's outcome once its row says it (the turn runs in this engine after the resolution took it over). */
/**
 * The turn's outcome once it ends here, also while another recovery of this engine (its deadline
 * timer's) is still taking it: its handle's `done` once it is tracked, else its row's outcome.
 */
async function endOf(engine: Engine, turnId: string): Promise<string | null> {
  const { sessionId } = (await engine.getTurn(turnId))!
  for (const deadline = Date.now() + 20_000; Date.now() < deadline; await new Promise((resolve) => setTimeout(resolve, 25))) {
    const turn = engine.activeTurn(sessionId)
    if (turn) return (await turn.done).outcome
    const { outcome } = (await engine.getTurn(turnId))!
    if (outcome) return outcome
  }
  return null
}

async function waitForOutcome(engine: Engine, turnId: string): Promise<string | null> {
  const turn = engine.activeTurn((await engine.getTurn(turnId))!.sessionId)
  if (turn) return (await turn.done).outcome
  return (await engine.getTurn(turnId))!.outcome
}
