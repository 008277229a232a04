/**
 * Approved, then killed: the process dies at each point between an approval and its tool's
 * side effect. A new engine finishes the turn, approving again where the approval had not
 * committed. A non-idempotent tool runs at most once: where its approval committed, a run that
 * may have started is in doubt: never an error the model sees. Without a `reconcile` hook the
 * turn waits in `call-in-doubt` and a person (the test, reading the ledger) resolves it: the
 * output when the charge happened, `retry` when not; with one, the hook reads the ledger. Either
 * way the card is charged exactly once. The side effects are counted in a file.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { runUntilKilled } from '../support/child-process'
import { createEngine } from '../../src'
import { startScriptedServer, type ScriptedServer } from '../../src/testing'
import { modelFor, tempDbPath } from '../support/harness'
import { waitingCall } from '../support/waiting-call'
import { chargeTool, reconcilingChargeTool } from './approval-kill-child'

jest.setTimeout(60_000)

let server: ScriptedServer
let dbPath: string
let sideEffects: string
beforeEach(async () => {
  server = await startScriptedServer()
  dbPath = tempDbPath()
  sideEffects = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'side-effects-')), 'charges.log')
  fs.writeFileSync(sideEffects, '')
})
afterEach(async () => {
  await server.close()
  fs.rmSync(path.dirname(dbPath), { recursive: true, force: true })
  fs.rmSync(path.dirname(sideEffects), { recursive: true, force: true })
})

const charges = () => fs.readFileSync(sideEffects, 'utf8').split('\n').filter(Boolean).length

function runChildUntilKilled(point: string): Promise<void> {
  return runUntilKilled(path.join(__dirname, 'approval-kill-child.ts'), [dbPath, server.url, point], point, { ...process.env, TURNCHART_SIDE_EFFECTS: sideEffects })
}

test.each([
  ['same-tick', 'a person'],
  ['committed', 'a person'],
  ['in-tool', 'a person'],
  ['returned', 'a person'],
  ['stored', 'a person'],
  ['committed', 'reconcile'],
  ['in-tool', 'reconcile'],
])('killed at %s after the approval, the doubt settled by %s: the card is charged exactly once', async (point, settler) => {
  server.tool('charge', { amount: 5 }, { id: 'call_charge' })
  server.text('done')
  server.text('done, after a restart')
  await runChildUntilKilled(point)
  const before = charges()

  process.env.TURNCHART_SIDE_EFFECTS = sideEffects
  const charge = settler === 'reconcile' ? reconcilingChargeTool() : chargeTool()
  const engine = await createEngine({ database: dbPath, model: modelFor(server), tools: { charge }, recovery: { onOpen: false } })
  try {
    const approvals: string[] = []
    engine.subscribe((event) => {
      if (event.type === 'approval.requested') for (const call of event.calls) approvals.push(call.callId)
    })
    const [turn] = await engine.recover()
    // Where the approval never committed, the call is still waiting: approve it again.
    if (approvals.length) await engine.approve(turn.id, approvals[0])
    // A call in doubt: the model has not been called; a person looks at the ledger and says what happened.
    const inDoubt = await Promise.race([waitingCall(turn), turn.done.then(() => undefined)])
    if (inDoubt) {
      expect(settler).toBe('a person')
      expect(inDoubt).toMatchObject({ status: 'in-doubt', reason: 'restart' })
      expect(server.calls).toBe(1)
      expect(await engine.getTurn(turn.id)).toMatchObject({ state: 'call-in-doubt' })
      await engine.resolveCall(turn.id, inDoubt.callId, charges() === 1 ? { output: 'charged 5 (seen in the ledger)' } : { retry: true })
    }
    const result = await turn.done
    expect(result.outcome).toBe('completed')
    expect(charges()).toBe(1)
    const parts = (await engine.messages((await engine.getTurn(turn.id))!.sessionId)).flatMap((m) => m.parts)
    const part = parts.find((p) => p.type === 'tool')
    // It ran once, or its effect was reported: never an error the model sees, never pending or running.
    expect(part?.type === 'tool' && part.state.status).toBe('completed')
    console.log(`killed at ${point}: side effects before recovery ${before}, approval asked again: ${approvals.length > 0}, in doubt: ${inDoubt !== undefined}, settled by ${settler}`)
  } finally {
    await engine.close()
  }
})
