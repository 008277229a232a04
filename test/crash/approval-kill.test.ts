/**
 * Approved, then killed: the process dies at each point between an approval and its tool's
 * side effect. A new engine finishes the turn, approving again where the approval had not
 * committed. A non-idempotent tool runs at most once: where its approval committed, a run that
 * may have started becomes an error "interrupted by a restart" that the model sees. The side
 * effects are counted in a file.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { forkNode } from '../support/compiled'
import { createEngine } from '../../src'
import { startScriptedServer, type ScriptedServer } from '../../src/testing'
import { modelFor, tempDbPath } from '../support/harness'
import { chargeTool } from './approval-kill-child'

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
  return new Promise((resolve, reject) => {
    const child = forkNode(path.join(__dirname, 'approval-kill-child.ts'), [dbPath, server.url, point], {
      env: { ...process.env, TURNCHART_SIDE_EFFECTS: sideEffects },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    })
    const timer = setTimeout(() => (child.kill('SIGKILL'), reject(new Error(`the child never reached '${point}'`))), 30_000)
    child.once('exit', (_code, signal) => {
      clearTimeout(timer)
      if (signal === 'SIGKILL') resolve()
      else reject(new Error(`the child exited without being killed at '${point}'`))
    })
  })
}

test.each(['same-tick', 'committed', 'in-tool', 'returned'])('killed at %s after the approval: the tool ran at most once', async (point) => {
  server.tool('charge', { amount: 5 }, { id: 'call_charge' })
  server.text('done')
  server.text('done, after a restart')
  await runChildUntilKilled(point)
  const before = charges()

  process.env.TURNCHART_SIDE_EFFECTS = sideEffects
  const engine = await createEngine({ database: dbPath, model: modelFor(server), tools: { charge: chargeTool() }, recovery: { onOpen: false } })
  try {
    const approvals: string[] = []
    engine.subscribe((event) => {
      if (event.type === 'approval.requested') for (const call of event.calls) approvals.push(call.callId)
    })
    const [turn] = await engine.recover()
    // Where the approval never committed, the call is still waiting: approve it again.
    if (approvals.length) await engine.approve(turn.id, approvals[0])
    const result = await turn.done
    expect(result.outcome).toBe('completed')
    expect(charges()).toBeLessThanOrEqual(1)
    if (before === 0 && approvals.length) expect(charges()).toBe(1) // approved again, ran once
    const parts = (await engine.messages((await engine.getTurn(turn.id))!.sessionId)).flatMap((m) => m.parts)
    const charge = parts.find((p) => p.type === 'tool')
    // Either it ran (once), or it is an error the model sees; never pending or running.
    expect(charge?.type === 'tool' && ['completed', 'error'].includes(charge.state.status)).toBe(true)
    console.log(`killed at ${point}: side effects ${charges()}, approval asked again: ${approvals.length > 0}, tool part ${charge?.type === 'tool' ? charge.state.status : '-'}`)
  } finally {
    await engine.close()
  }
})
