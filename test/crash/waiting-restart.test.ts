/**
 * What waits, after a restart (issue 52): an app SIGKILLed while a turn awaits approval starts
 * again with `onEvent`, hears `approval.requested` from the recovery at open (before
 * `createEngine` resolves, where `subscribe` would be too late), finds the call in
 * `engine.waiting()`, approves it, and the turn completes. Killed after the turn parked, the new
 * engine leaves it parked (nothing is announced) and still finds it in `engine.waiting()`.
 */
import fs from 'node:fs'
import path from 'node:path'
import { runUntilKilled } from '../support/child-process'
import { createEngine, type TurnchartEvent } from '../../src'
import { startScriptedServer, type ScriptedServer } from '../../src/testing'
import { modelFor, tempDbPath } from '../support/harness'
import { deployTool } from './waiting-restart-child'

jest.setTimeout(60_000)

let server: ScriptedServer
let dbPath: string
beforeEach(async () => {
  server = await startScriptedServer()
  dbPath = tempDbPath()
})
afterEach(async () => {
  await server.close()
  fs.rmSync(path.dirname(dbPath), { recursive: true, force: true })
})

function runChildUntilKilled(point: 'held' | 'parked'): Promise<void> {
  return runUntilKilled(path.join(__dirname, 'waiting-restart-child.ts'), [dbPath, server.url, point], point)
}

test.each([
  ['held', true],
  ['parked', false],
] as const)('killed while a turn awaits approval (%s): the app started again finds the call in engine.waiting() and approves it', async (point, announcedAtOpen) => {
  server.tool('deploy', { service: 'api' }, { id: 'call_deploy' })
  server.text('the api is deployed')
  await runChildUntilKilled(point)
  const heard: TurnchartEvent[] = []
  const engine = await createEngine({ database: dbPath, model: modelFor(server), tools: { deploy: deployTool() }, onEvent: (event) => void heard.push(event) })
  try {
    // The recovery at open resumed a held turn (its process is gone) and asked again, before createEngine resolved.
    const asked = heard.filter((e) => e.type === 'approval.requested')
    expect(asked.length > 0).toBe(announcedAtOpen)
    const waiting = await engine.waiting()
    expect(waiting).toEqual([
      expect.objectContaining({ callId: 'call_deploy', toolName: 'deploy', kind: 'approval', input: { service: 'api' }, state: 'awaiting-approval', parked: point === 'parked' }),
    ])
    const [{ turnId, sessionId }] = waiting
    expect(await engine.waiting({ sessionId })).toHaveLength(1)
    expect(await engine.waiting({ sessionId: 'ses_other' })).toEqual([])
    const completed = new Promise<void>((resolve) => engine.subscribe((e) => e.type === 'turn.transition' && e.turnId === turnId && e.to === 'completed' && resolve()))
    await engine.approve(turnId, 'call_deploy')
    await completed
    expect(await engine.getTurn(turnId)).toMatchObject({ outcome: 'completed' })
    expect(await engine.waiting()).toEqual([])
  } finally {
    await engine.close()
  }
})
