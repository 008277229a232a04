/**
 * The viewer calls a turn live only while an engine runs it: a turn a closed engine released
 * (owner and lease null) is unfinished but not live, and says no engine runs it; one awaiting
 * approval is waiting. Read from the rows a real engine wrote.
 */
import fs from 'node:fs'
import path from 'node:path'
import { createEngine } from '../../src'
import { startScriptedServer } from '../../src/testing'
import { activityStatus, turnActivity } from '../../src/viewer/page/turn-activity'
import { stateFields } from '../../src/viewer/page-views'
import { modelFor, tempDbPath } from '../support/harness'

test('a streaming turn is running (live); released by its closed engine it is unfinished and nobody runs it (not live)', async () => {
  const server = await startScriptedServer()
  const database = tempDbPath()
  try {
    server.push({ type: 'stream', chunks: [{ text: 'partial ' }], end: 'hang' })
    const engine = await createEngine({ database, model: modelFor(server) })
    const session = await engine.createSession()
    const turn = engine.prompt(session.id, 'Go on.')
    await server.waitForCall(1)
    const running = (await engine.getTurn(turn.id))!
    expect(turnActivity(running, Date.now())).toBe('running')
    expect(activityStatus([running], Date.now())).toEqual({ text: '● live: a turn is running', live: true })
    await engine.close() // releases the turn: the next engine resumes it

    const reader = await createEngine({ database, model: modelFor(server), recovery: { onOpen: false, intervalMs: 0 } })
    try {
      const released = (await reader.getTurn(turn.id))!
      expect(released).toMatchObject({ outcome: null, owner: null, leaseUntil: null })
      expect(turnActivity(released, Date.now())).toBe('unowned')
      expect(activityStatus([released], Date.now())).toMatchObject({ live: false, text: expect.stringContaining('no engine runs it') })
      // (the page is told the turn waits by the server, which reads the chart's `meta.wait`)
      expect(turnActivity({ ...released, state: 'awaiting-approval', ...stateFields('awaiting-approval') }, Date.now())).toBe('waiting')
    } finally {
      await reader.close()
    }
  } finally {
    await server.close()
    fs.rmSync(path.dirname(database), { recursive: true, force: true })
  }
})

test('a parked turn (no engine holds it, no lease) is waiting, not live and not unowned', async () => {
  const server = await startScriptedServer()
  const database = tempDbPath()
  try {
    server.tool('deploy', { env: 'prod' }, { id: 'call_p' })
    const { tool } = await import('ai')
    const { z } = await import('zod')
    const deploy = tool({ description: 'Deploy', inputSchema: z.object({ env: z.string() }), needsApproval: true, execute: async () => 'ok' })
    const engine = await createEngine({ database, model: modelFor(server), tools: { deploy }, parkAfterMs: 0 })
    try {
      const session = await engine.createSession()
      const turn = engine.prompt(session.id, 'ship')
      await expect(turn.done).rejects.toMatchObject({ name: 'TurnParkedError', state: 'awaiting-approval' })
      const parked = (await engine.getTurn(turn.id))!
      expect(parked).toMatchObject({ outcome: null, state: 'awaiting-approval', owner: 'turnchart:parked', leaseUntil: null })
      expect(turnActivity(parked, Date.now())).toBe('waiting')
      expect(activityStatus([parked], Date.now())).toMatchObject({ live: false, text: expect.stringContaining('waiting') })
    } finally {
      await engine.close()
    }
  } finally {
    await server.close()
    fs.rmSync(path.dirname(database), { recursive: true, force: true })
  }
})
