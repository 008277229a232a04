/**
 * Replay of a turn's log, its refusal of a log the chart would not have taken, pruning, and
 * how much the database grows per turn.
 */
import Database from 'better-sqlite3'
import { tool } from 'ai'
import { z } from 'zod'
import { createHarness, sqliteOnly, type Harness } from '../support/harness'
import { ReplayMismatchError } from '../../src/turn/replay'

let h: Harness
afterEach(async () => {
  await h?.close()
})

const work = tool({ description: 'Work', inputSchema: z.object({ n: z.number() }), execute: async ({ n }) => 'x'.repeat(1024) + n })

async function tenStepTurn(h: Harness) {
  for (let n = 1; n <= 9; n++) h.server.tool('work', { n }, { text: 'step text '.repeat(40) })
  h.server.text('done '.repeat(80))
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'work ten steps')
  expect((await turn.done).outcome).toBe('completed')
  return { session, turn }
}

test('replay rebuilds the state sequence with the parts each transition wrote', async () => {
  h = await createHarness({ tools: { work } })
  h.server.error(503, { error: { message: 'overloaded' } })
  h.server.tool('work', { n: 1 })
  h.server.text('done')
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'x')
  await turn.done
  const steps = await h.engine.replay(turn.id)
  expect(steps.map((s) => `${s.event}>${s.state}`)).toEqual([
    'turn.start>step-gate',
    'gate.continue>streaming',
    'step.failed>retry-waiting',
    'xstate.after.retryDelay.turn.running.step.retry-waiting>streaming',
    'step.finished>tool-running',
    'gate.continue>streaming',
    'step.finished>completed',
  ])
  const partIds = new Set((await h.engine.messages(session.id)).flatMap((m) => m.parts.map((p) => p.id)))
  for (const step of steps) for (const id of step.parts) expect(partIds.has(id)).toBe(true)
  expect(steps.at(-1)!.parts.length).toBeGreaterThan(0)
})

sqliteOnly('replay reports a hand-edited log instead of guessing', async () => {
  h = await createHarness()
  h.server.text('hello')
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'x')
  await turn.done
  const raw = new Database(h.dbPath)
  raw.prepare("update turnchart_transitions set to_state = 'tool-running' where turn_id = ? and seq = 3").run(turn.id)
  raw.close()
  const error = await h.engine.replay(turn.id).catch((e: unknown) => e)
  expect(ReplayMismatchError.isInstance(error)).toBe(true)
  expect(error).toMatchObject({ seq: 3, expected: 'completed', logged: 'tool-running' })

  const raw2 = new Database(h.dbPath)
  raw2.prepare('delete from turnchart_transitions where turn_id = ? and seq = 1').run(turn.id)
  raw2.close()
  await expect(h.engine.replay(turn.id)).rejects.toMatchObject({ name: 'ReplayMismatchError', seq: 2 })
})

test('prune deletes the logs of finished turns and keeps their messages and parts', async () => {
  h = await createHarness({ tools: { work } })
  const { session, turn } = await tenStepTurn(h)
  const before = await h.engine.messages(session.id)
  expect(await h.engine.prune({ olderThan: new Date(Date.now() - 60_000) })).toBe(0)
  const deleted = await h.engine.prune({ olderThan: Date.now() + 1 })
  expect(deleted).toBe(21) // the first step gate, then 10 steps × (streaming, tool-running or completed); after a step's tools the tool actor decides the gate
  expect(await h.engine.transitions(turn.id)).toEqual([])
  expect(await h.engine.messages(session.id)).toEqual(before)
  expect((await h.engine.getTurn(turn.id))?.outcome).toBe('completed')
})

sqliteOnly('a 10-step turn with tools adds a bounded number of rows and bytes, the same for each turn', async () => {
  h = await createHarness({ tools: { work } })
  const raw = new Database(h.dbPath, { readonly: true })
  const measure = () => {
    const rows: Record<string, number> = {}
    let bytes = 0
    for (const table of ['turnchart_messages', 'turnchart_parts', 'turnchart_turns', 'turnchart_transitions']) {
      rows[table] = (raw.prepare(`select count(*) as n from ${table}`).get() as { n: number }).n
    }
    bytes += (raw.prepare('select coalesce(sum(length(data)), 0) as b from turnchart_parts').get() as { b: number }).b
    bytes += (raw.prepare('select coalesce(sum(length(data)), 0) as b from turnchart_messages').get() as { b: number }).b
    bytes += (raw.prepare('select coalesce(sum(length(payload)) + sum(coalesce(length(parts), 0)), 0) as b from turnchart_transitions').get() as { b: number }).b
    return { rows, bytes }
  }
  const start = measure()
  await tenStepTurn(h)
  const first = measure()
  await tenStepTurn(h)
  const second = measure()
  const delta = (a: typeof start, b: typeof start) => ({
    rows: Object.fromEntries(Object.keys(a.rows).map((k) => [k, b.rows[k] - a.rows[k]])),
    bytes: b.bytes - a.bytes,
  })
  const d1 = delta(start, first)
  const d2 = delta(first, second)
  // 2 messages; 10 steps × (step-start, text, step-finish) + 9 tool parts + the prompt; 1 turn;
  // 21 transitions (into the first step gate; each step: into streaming, out of it; after a step's tools the tool actor decides the gate)
  expect(d1.rows).toEqual({ turnchart_messages: 2, turnchart_parts: 40, turnchart_turns: 1, turnchart_transitions: 21 })
  expect(d2.rows).toEqual(d1.rows)
  expect(d2.bytes).toBeLessThan(d1.bytes * 1.1)
  expect(d1.bytes).toBeLessThan(40_000)
  console.log(`10-step turn with 1 KB tool outputs: ${JSON.stringify(d1.rows)}, ${d1.bytes} bytes of row data`)
  raw.close()
})
