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
  // A real SQLite failure inside the engine's transaction: the third transition row (entering
  // tool-running, after the prompt's idle → step-gate → streaming) cannot be inserted; the failure's own row may take its seq.
  const raw = new Database(h.dbPath)
  raw.exec(`create trigger fail_second before insert on turnchart_transitions when new.seq = 3 and new.event_type <> 'turn.fail'
            begin select raise(abort, 'simulated write failure'); end`)
  raw.close()
  const turn = h.engine.prompt(session.id, 'x')
  const result = await turn.done
  expect(result).toMatchObject({ outcome: 'failed', error: { name: 'StorageError' } })
  const log = await h.engine.transitions(turn.id)
  // The log leaves the last committed state, so it replays; the tool never ran, no second model call went out.
  expect(log.map((t) => [t.seq, t.from, t.event, t.to])).toEqual([[1, 'idle', 'turn.start', 'step-gate'], [2, 'step-gate', 'gate.continue', 'streaming'], [3, 'streaming', 'turn.fail', 'failed']])
  expect((await h.engine.replay(turn.id)).map((s) => s.state)).toEqual(['step-gate', 'streaming', 'failed'])
  expect(await h.engine.getTurn(turn.id)).toMatchObject({ state: 'failed', outcome: 'failed' })
  expect(executions).toBe(0)
  expect(h.server.calls).toBe(1)
  const parts = (await h.engine.messages(session.id))[1].parts
  expect(parts.map((p) => p.type)).toEqual(['step-start', 'text', 'tool', 'step-finish'])
  expect(parts.find((p) => p.type === 'text')).toMatchObject({ text: 'calling the tool', time: { end: expect.any(Number) } })
  expect(parts.find((p) => p.type === 'tool')).toMatchObject({ state: { status: 'error', error: 'Tool not run: the turn failed (StorageError)' } })
})

sqliteOnly('a failed final row is replaced by the failure\'s row: the turn is never reported completed without its row', async () => {
  h = await createHarness()
  h.server.text('the answer')
  const session = await h.engine.createSession()
  const raw = new Database(h.dbPath)
  raw.exec(`create trigger fail_completed before insert on turnchart_transitions when new.to_state = 'completed'
            begin select raise(abort, 'simulated write failure'); end`)
  raw.close()
  const turn = h.engine.prompt(session.id, 'x')
  expect(await turn.done).toMatchObject({ outcome: 'failed', error: { name: 'StorageError' } })
  expect(await h.engine.getTurn(turn.id)).toMatchObject({ state: 'failed', outcome: 'failed', error: { name: 'StorageError' } })
  expect((await h.engine.transitions(turn.id)).map((t) => `${t.seq} ${t.from} --${t.event}--> ${t.to}`)).toEqual([
    '1 idle --turn.start--> step-gate',
    '2 step-gate --gate.continue--> streaming',
    '3 streaming --turn.fail--> failed',
  ])
  expect((await h.engine.replay(turn.id)).at(-1)?.state).toBe('failed')
})

sqliteOnly('when no final row can be written the turn is left for recovery, and its own engine takes it back once its lease runs out', async () => {
  h = await createHarness({ leaseMs: 300, recovery: { onOpen: false, intervalMs: 0 } })
  h.server.text('the answer')
  h.server.text('the answer, again')
  const session = await h.engine.createSession()
  const raw = new Database(h.dbPath)
  raw.exec(`create trigger fail_final before insert on turnchart_transitions when new.to_state in ('completed', 'failed')
            begin select raise(abort, 'simulated write failure'); end`)
  const turn = h.engine.prompt(session.id, 'x')
  // Its end is recovery's to decide: done says the outcome is unknown, the write's failure as cause.
  await expect(turn.done).rejects.toMatchObject({ name: 'TurnOutcomeUnknownError', turnId: turn.id, cause: { name: 'StorageError' } })
  expect(await h.engine.getTurn(turn.id)).toMatchObject({ state: 'streaming', outcome: null })
  raw.exec('drop trigger fail_final')
  raw.close()
  // Its lease is no longer renewed (the turn left this engine): not before it runs out, and once
  // it has (the clock moved past it, Date only: the engine's I/O and timers stay real), this
  // engine recovers it.
  const { leaseUntil } = (await h.engine.getTurn(turn.id))!
  expect(await h.engine.recover()).toEqual([])
  jest.useFakeTimers({ now: leaseUntil! + 1, doNotFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'setImmediate', 'clearImmediate', 'nextTick', 'queueMicrotask', 'hrtime', 'performance'] })
  let taken: Awaited<ReturnType<typeof h.engine.recover>>
  try {
    taken = await h.engine.recover()
  } finally {
    jest.useRealTimers()
  }
  expect(taken.map((t) => t.id)).toEqual([turn.id])
  expect((await taken[0].done).outcome).toBe('completed')
  expect((await h.engine.replay(turn.id)).at(-1)?.state).toBe('completed')
})
