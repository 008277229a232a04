/**
 * A transition whose write rolls back fails the turn, and loses nothing: every part of the
 * step still ends stored and closed (what a rolled-back write took stays dirty for the next).
 */
import Database from 'better-sqlite3'
import { tool } from 'ai'
import { z } from 'zod'
import { createHarness, sqliteOnly, type Harness } from '../support/harness'

let h: Harness
afterEach(async () => {
  await h?.close()
})

sqliteOnly('a rolled-back transition fails the turn before any effect of the state it entered; the step\'s parts all end stored and closed', async () => {
  let executions = 0
  const work = tool({
    description: 'Work',
    inputSchema: z.object({}),
    execute: async () => {
      executions++
      return 'done'
    },
  })
  // Flushes between transitions are pushed out of the way, so the step's parts travel with the transition rows.
  h = await createHarness({ tools: { work }, flushIntervalMs: 60_000 })
  h.server.tool('work', {}, { text: 'calling the tool' })
  const session = await h.engine.createSession()
  // A real SQLite failure inside the engine's transaction: the second transition row (entering
  // tool-running) cannot be inserted; the failure's own row may take its seq.
  const raw = new Database(h.dbPath)
  raw.exec(`create trigger fail_second before insert on turnchart_transitions when new.seq = 2 and new.event_type <> 'turn.fail'
            begin select raise(abort, 'simulated write failure'); end`)
  raw.close()
  const turn = h.engine.prompt(session.id, 'x')
  const result = await turn.done
  expect(result).toMatchObject({ outcome: 'failed', error: { name: 'StorageError' } })
  const log = await h.engine.transitions(turn.id)
  // The log leaves the last committed state, so it replays; the tool never ran, no second model call went out.
  expect(log.map((t) => [t.seq, t.from, t.event, t.to])).toEqual([[1, 'idle', 'turn.start', 'streaming'], [2, 'streaming', 'turn.fail', 'failed']])
  expect((await h.engine.replay(turn.id)).map((s) => s.state)).toEqual(['streaming', 'failed'])
  expect(await h.engine.getTurn(turn.id)).toMatchObject({ state: 'failed', outcome: 'failed' })
  expect(executions).toBe(0)
  expect(h.server.calls).toBe(1)
  const parts = (await h.engine.messages(session.id))[1].parts
  expect(parts.map((p) => p.type)).toEqual(['step-start', 'text', 'tool', 'step-finish'])
  expect(parts.find((p) => p.type === 'text')).toMatchObject({ text: 'calling the tool', time: { end: expect.any(Number) } })
  expect(parts.find((p) => p.type === 'tool')).toMatchObject({ state: { status: 'error', error: 'Tool not run: the turn failed (StorageError)' } })
})
