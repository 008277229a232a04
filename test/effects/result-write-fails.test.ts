/**
 * A non-idempotent tool ran, and the write of its result failed (an injected failure of the
 * statement, inside the engine's own transaction): the turn is not failed and the call is never
 * an error the model sees; the turn is left open, the next engine finds the call in doubt, and
 * `resolveCall` settles it. On this run's dialect (SQLite, or PostgreSQL in the postgres project).
 */
import { tool } from 'ai'
import { z } from 'zod'
import { createEngine, TurnOutcomeUnknownError, type ToolPart } from '../../src'
import { startScriptedServer } from '../../src/testing'
import { FailNthWrite, kyselyWith } from '../support/failing-writes'
import { freshDatabase, modelFor } from '../support/harness'
import { waitingCall } from '../support/waiting-call'

test('the result of a tool that ran could not be stored: in doubt in the next engine, resolved, never run twice', async () => {
  const server = await startScriptedServer()
  const fresh = freshDatabase()
  const plugin = new FailNthWrite()
  const db = await kyselyWith(fresh, plugin)
  let runs = 0
  const tools = {
    charge: tool({
      description: 'Charge (not idempotent)',
      inputSchema: z.object({ cents: z.number() }),
      execute: async ({ cents }) => {
        runs++
        plugin.arm(1) // the next write (the result's, with the row leaving tool-running) fails
        return `charged ${cents}`
      },
    }),
  }
  const common = { model: modelFor(server), tools, recovery: { onOpen: false, intervalMs: 0 }, flushIntervalMs: 10 }
  try {
    const engine = await createEngine({ ...common, database: db })
    const session = await engine.createSession()
    server.tool('charge', { cents: 5 })
    const turn = engine.prompt(session.id, 'pay')
    const error = await turn.done.then(() => undefined, (e: unknown) => e)
    expect(TurnOutcomeUnknownError.isInstance(error)).toBe(true)
    expect(plugin.failed).toBe(true)
    expect(await engine.getTurn(turn.id)).toMatchObject({ state: 'tool-running', outcome: null })
    await engine.close()

    server.text('charged')
    const next = await createEngine({ ...common, database: fresh.database })
    try {
      const [resumed] = await next.recover()
      const call = await waitingCall(resumed)
      expect(call).toMatchObject({ status: 'in-doubt', reason: 'restart' })
      expect(server.calls).toBe(1)
      await next.resolveCall(turn.id, call.callId, { output: 'charged 5' })
      expect((await resumed.done).outcome).toBe('completed')
      const part = (await next.messages(session.id)).flatMap((m) => m.parts).find((p): p is ToolPart => p.type === 'tool')!
      expect(part.state).toMatchObject({ status: 'completed', output: 'charged 5' })
      expect(runs).toBe(1)
    } finally {
      await next.close()
    }
  } finally {
    await db.destroy().catch(() => undefined)
    await server.close()
    await fresh.drop()
  }
})
