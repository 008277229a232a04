/**
 * Forks at a step (`engine.forkTurn`): a stored 4-step turn (three tool calls, then an answer)
 * forked at step 2 continues live with a second model, and the fork records where it came
 * from, read back from the store and printed by `turnchart show`. A real engine on a SQLite
 * file (or PostgreSQL), two scripted OpenAI servers on 127.0.0.1.
 */
import { tool } from 'ai'
import { z } from 'zod'
import { startScriptedServer, type ScriptedServer } from '../../src/testing'
import { createHarness, modelFor, testDialect, type Harness } from '../support/harness'
import { runCli } from '../cli/run-cli'

let h: Harness
let second: ScriptedServer
afterEach(async () => {
  await h?.close()
  await second?.close()
})

const add = tool({ description: 'Add two numbers', inputSchema: z.object({ a: z.number(), b: z.number() }), execute: async ({ a, b }) => ({ sum: a + b }) })

test('a fork at step 2 of a stored 4-step turn continues with a second model and records its origin', async () => {
  second = await startScriptedServer()
  h = await createHarness({ tools: { add }, models: { second: modelFor(second, 'second-model') } })
  h.server.tool('add', { a: 1, b: 1 }, { id: 'call_1' })
  h.server.tool('add', { a: 2, b: 2 }, { id: 'call_2' })
  h.server.tool('add', { a: 3, b: 3 }, { id: 'call_3' })
  h.server.text('2, 4 and 6.')
  const session = await h.engine.createSession({ title: 'sums' })
  const turn = h.engine.prompt(session.id, 'Add 1+1, 2+2 and 3+3, one call each.')
  expect((await turn.done).outcome).toBe('completed')
  expect(h.server.calls).toBe(4)

  const fork = await h.engine.forkTurn(turn.id, { step: 2 })
  expect(fork.forkedFrom).toEqual({ sessionId: session.id, turnId: turn.id, step: 2 })
  const copied = await h.engine.messages(fork.id)
  const calls = copied.flatMap((m) => m.parts).filter((p) => p.type === 'tool')
  expect(calls.map((p) => p.type === 'tool' && p.callId)).toEqual(['call_1', 'call_2'])
  expect(copied.flatMap((m) => m.parts).some((p) => p.type === 'text' && p.text === '2, 4 and 6.')).toBe(false)

  second.text('The second model says: 2 and 4 so far.')
  const continued = h.engine.prompt(fork.id, 'Go on.', { model: 'second' })
  expect((await continued.done).outcome).toBe('completed')
  expect(second.calls).toBe(1)
  expect(h.server.calls).toBe(4)
  // The second model saw the prompt, steps 1 and 2 (their calls and results), and the continuation.
  const sent = JSON.stringify(second.requests[0].body)
  expect(sent).toContain('Add 1+1, 2+2 and 3+3')
  expect(sent).toContain('call_1')
  expect(sent).toContain('call_2')
  expect(sent).not.toContain('call_3')
  expect(sent).toContain('Go on.')

  // Read back from the store (a new read), and shown by the CLI.
  expect((await h.engine.getSession(fork.id))?.forkedFrom).toEqual({ sessionId: session.id, turnId: turn.id, step: 2 })
  expect((await h.engine.getSession(session.id))?.forkedFrom).toBeUndefined()
  if (testDialect === 'sqlite') {
    const shown = await runCli(['show', h.dbPath, fork.id], { NO_COLOR: '1' })
    expect(shown).toMatchObject({ code: 0, stderr: '' })
    expect(shown.stdout).toContain(`forked from ${session.id} turn ${turn.id} at step 2`)
  }

  await expect(h.engine.forkTurn(turn.id, { step: 5 })).rejects.toMatchObject({ name: 'InvalidArgumentError', argument: 'step' })
  await expect(h.engine.forkTurn('trn_missing', { step: 1 })).rejects.toMatchObject({ name: 'TurnNotFoundError' })
})
