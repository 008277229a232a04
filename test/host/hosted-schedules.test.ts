/**
 * A host's engine has no sweep (the host runs its turns and their waits itself), so it stores no
 * schedule that nothing would fire: `engine.schedule` is refused, saying so, and a turn's
 * `scheduleTool` call ends as the tool's error the model sees, nothing stored.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { scheduleTool } from '../../src'
import { HostedTurns } from '../../src/host'
import { startScriptedServer, type ScriptedServer } from '../../src/testing'
import { modelFor } from '../support/harness'

let dir: string
let server: ScriptedServer
let turns: HostedTurns | undefined
beforeEach(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'turnchart-hosted-schedules-'))
  server = await startScriptedServer()
})
afterEach(async () => {
  await turns?.engine.close()
  turns = undefined
  await server.close()
  fs.rmSync(dir, { recursive: true, force: true })
})

test("a host's engine refuses to store a schedule; its turns' scheduleTool stores none and the model hears why", async () => {
  turns = await HostedTurns.open({ database: path.join(dir, 'agent.db'), model: modelFor(server), tools: { remind: scheduleTool({ needsApproval: false }) } }, { owner: 'test-host' })
  const session = await turns.engine.createSession()
  await expect(turns.engine.schedule({ sessionId: session.id, input: 'report', every: 60_000 })).rejects.toMatchObject({ name: 'InvalidArgumentError', argument: 'engine' })

  server.tool('remind', { prompt: 'stretch', everyMinutes: 5 })
  server.text('I could not set it.')
  const turnId = await turns.newTurn(session.id, { input: 'remind me' })
  expect(await turns.runUntilPause(session.id, turnId, { input: 'remind me' })).toMatchObject({ kind: 'ended', result: { outcome: 'completed' } })
  const tool = (await turns.engine.messages(session.id)).flatMap((m) => m.parts).find((p) => p.type === 'tool')
  expect(tool?.type === 'tool' && tool.state).toMatchObject({ status: 'error', error: expect.stringContaining('scheduleTool runs only') })
  expect(await turns.engine.schedules()).toEqual([])
})
