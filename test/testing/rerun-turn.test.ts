/**
 * `rerunTurn`, what `turnchart rerun` prints: a stored turn run again in a scratch database
 * against its recorded responses, with the session's history before it, its recorded approvals
 * and denials made again, an abort where the recording was aborted, and the engine options the
 * store does not keep (the retry limit, the context window) read back from its decisions.
 */
import fs from 'node:fs'
import path from 'node:path'
import { stepCountIs, tool } from 'ai'
import { z } from 'zod'
import { createEngine } from '../../src'
import { rerunTurn } from '../../src/testing/rerun-turn'
import { createHarness, modelFor, tempDbPath, type Harness } from '../support/harness'

let h: Harness
afterEach(async () => {
  await h?.close()
})

const add = tool({ description: 'Add two numbers', inputSchema: z.object({ a: z.number(), b: z.number() }), execute: async ({ a, b }) => ({ sum: a + b }) })
const remove = tool({
  description: 'Delete a file',
  inputSchema: z.object({ path: z.string() }),
  needsApproval: true,
  execute: async ({ path: file }) => `deleted ${file}`,
})

test('the second turn of a session re-runs with the history before it, its approval and its denial made again', async () => {
  h = await createHarness({ tools: { add, remove } })
  h.server.text('Hello, I can add and delete.')
  const session = await h.engine.createSession()
  await h.engine.prompt(session.id, 'What can you do?').done
  h.server.tools([
    { name: 'remove', input: { path: 'a.txt' }, id: 'call_a' },
    { name: 'remove', input: { path: 'b.txt' }, id: 'call_b' },
  ])
  h.server.text('Deleted a.txt; b.txt was kept.')
  const turn = h.engine.prompt(session.id, 'Delete a.txt and b.txt.')
  await h.waitForEvent((e) => e.type === 'approval.requested' && e.turnId === turn.id)
  await h.engine.approve(turn.id, 'call_a')
  await h.engine.deny(turn.id, 'call_b', 'keep it')
  expect((await turn.done).outcome).toBe('completed')

  const result = await rerunTurn(h.engine, turn.id)
  expect(result.identical).toBe(true)
  expect(result.firstDifference).toBe(-1)
  expect(result.rerun.states).toEqual(result.original.states)
  expect(result.rerun.states).toEqual(['step-gate', 'streaming', 'awaiting-approval', 'awaiting-approval', 'tool-running', 'streaming', 'completed'])
  const tools = result.rerun.parts.filter((p) => p.type === 'tool').map((p) => (p.type === 'tool' ? [p.callId, p.state.status, p.state.status === 'error' ? p.state.error : p.state.status === 'completed' ? p.state.output : null] : []))
  expect(tools).toEqual([
    ['call_a', 'completed', 'deleted a.txt'],
    ['call_b', 'error', 'the user denied this tool call: keep it'],
  ])
  expect(h.server.calls).toBe(3)
})

test('a turn aborted mid-answer re-runs up to the same point and is aborted there', async () => {
  h = await createHarness()
  h.server.push({ type: 'stream', chunks: [{ text: 'A long ' }, { text: 'answer' }], end: 'hang' })
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'Write a lot.')
  await h.waitForEvent((e) => e.type === 'part.delta' && e.delta === 'answer')
  turn.abort()
  expect((await turn.done).outcome).toBe('aborted')

  const result = await rerunTurn(h.engine, turn.id)
  expect(result).toMatchObject({ identical: true, rerun: { outcome: 'aborted', states: ['step-gate', 'streaming', 'aborted'] } })
  expect(result.rerun.parts.find((p) => p.type === 'text')).toMatchObject({ text: 'A long answer' })
})

test('a turn that ran out of retries fails the same way: the retry limit is read back from its RetriesExhaustedError', async () => {
  h = await createHarness({ retry: { maxAttempts: 2, initialDelayMs: 1, maxDelayMs: 5, jitter: 0 } })
  h.server.error(503, { error: { message: 'Service Unavailable', type: 'server_error' } })
  h.server.error(503, { error: { message: 'Service Unavailable', type: 'server_error' } })
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'hi')
  expect((await turn.done).error).toMatchObject({ name: 'RetriesExhaustedError', attempts: 2 })

  const result = await rerunTurn(h.engine, turn.id)
  expect(result.identical).toBe(true)
  expect(result.rerun.states).toEqual(['step-gate', 'streaming', 'retry-waiting', 'streaming', 'failed'])
  expect(result.rerun.error).toEqual(result.original.error)
})

test('the scratch database can be kept in a new SQLite file, never an existing one', async () => {
  h = await createHarness()
  h.server.text('Hello.')
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'hi')
  await turn.done
  const file = tempDbPath()
  try {
    const result = await rerunTurn(h.engine, turn.id, { database: file })
    const kept = await createEngine({ database: file, model: modelFor(h.server) })
    try {
      expect(await kept.getTurn(result.rerun.turnId)).toMatchObject({ outcome: 'completed' })
      expect((await kept.messages(session.id)).at(-1)?.parts.find((p) => p.type === 'text')).toMatchObject({ text: 'Hello.' })
    } finally {
      await kept.close()
    }
    await expect(rerunTurn(h.engine, turn.id, { database: file })).rejects.toMatchObject({ name: 'InvalidArgumentError', argument: 'database' })
  } finally {
    fs.rmSync(path.dirname(file), { recursive: true, force: true })
  }
})

test('a turn a stop condition ended (stopWhen, not stored) stops at the same step boundary', async () => {
  h = await createHarness({ tools: { add }, stopWhen: stepCountIs(1) })
  h.server.tool('add', { a: 1, b: 2 }, { id: 'call_1' })
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'Add 1+2.')
  expect((await turn.done).outcome).toBe('completed')

  const result = await rerunTurn(h.engine, turn.id)
  expect(result.rerun.states).toEqual(['step-gate', 'streaming', 'tool-running', 'completed'])
  expect(result.identical).toBe(true)
})
