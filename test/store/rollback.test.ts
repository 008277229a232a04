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

sqliteOnly('a rolled-back transition fails the turn; the step\'s parts all end stored and closed', async () => {
  // The tool never ends, so the turn is still in tool-running when the failed write is reported.
  const work = tool({ description: 'Work', inputSchema: z.object({}), execute: () => new Promise<string>(() => {}) })
  // Flushes between transitions are pushed out of the way, so the step's parts travel with the transition rows.
  h = await createHarness({ tools: { work }, flushIntervalMs: 60_000 })
  h.server.tool('work', {}, { text: 'calling the tool' })
  const session = await h.engine.createSession()
  // A real SQLite failure inside the engine's transaction: the second transition row cannot be inserted.
  const raw = new Database(h.dbPath)
  raw.exec(`create trigger fail_second before insert on turnchart_transitions when new.seq = 2
            begin select raise(abort, 'simulated write failure'); end`)
  raw.close()
  const turn = h.engine.prompt(session.id, 'x')
  const result = await turn.done
  expect(result).toMatchObject({ outcome: 'failed', error: { name: 'StorageError' } })
  const log = await h.engine.transitions(turn.id)
  expect(log.map((t) => [t.seq, t.from, t.to])).toEqual([[1, 'idle', 'streaming'], [3, 'tool-running', 'failed']])
  const parts = (await h.engine.messages(session.id))[1].parts
  expect(parts.map((p) => p.type)).toEqual(['step-start', 'text', 'tool', 'step-finish'])
  expect(parts.find((p) => p.type === 'text')).toMatchObject({ text: 'calling the tool', time: { end: expect.any(Number) } })
  expect(parts.find((p) => p.type === 'tool')).toMatchObject({ state: { status: 'error', error: 'Tool not run: the turn failed (StorageError)' } })
})
