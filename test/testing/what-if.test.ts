/**
 * What-if runs (`rerunTurn`): past a divergence with a live model (`afterDivergence: 'live'`),
 * and with the recorded model while the tools run live, going on past a tool result that
 * differs from the recording and reporting it as tool drift. A real engine on a SQLite file,
 * the scripted OpenAI server on 127.0.0.1.
 */
import { tool } from 'ai'
import { z } from 'zod'
import { rerunTurn, startScriptedServer, trajectoryOf, type ScriptedServer } from '../../src/testing'
import { createHarness, modelFor, type Harness } from '../support/harness'

let h: Harness
let live: ScriptedServer | undefined
afterEach(async () => {
  await h?.close()
  await live?.close()
  live = undefined
})

const add = tool({ description: 'Add two numbers', inputSchema: z.object({ a: z.number(), b: z.number() }), execute: async ({ a, b }) => ({ sum: a + b }) })
const lookup = tool({ description: 'Look a city up', inputSchema: z.object({ city: z.string() }), execute: async ({ city }) => ({ city, population: 1000 }) })

test('a what-if run goes on past the divergence with the live model, which answers from that call on', async () => {
  h = await createHarness({ tools: { add } })
  h.server.tool('add', { a: 1, b: 2 }, { id: 'call_1' })
  h.server.text('1 + 2 = 3.')
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'Add 1 and 2.')
  expect((await turn.done).outcome).toBe('completed')

  live = await startScriptedServer()
  live.text('With the new tool, 1 + 2 = 4.')
  const broken = tool({ description: 'Add two numbers', inputSchema: z.object({ a: z.number(), b: z.number() }), execute: async ({ a, b }) => ({ sum: a + b + 1 }) })
  const result = await rerunTurn(h.engine, turn.id, { tools: { add: broken }, afterDivergence: 'live', liveModel: modelFor(live, 'live-model') })

  expect(result.rerun.outcome).toBe('completed')
  expect(result.diverged).toMatchObject({ call: 2, step: 2, reason: expect.stringContaining('the result of tool call call_1 (add) differs') })
  expect(trajectoryOf(result.rerun).finalText).toBe('With the new tool, 1 + 2 = 4.')
  expect(live.calls).toBe(1)
  expect(h.server.calls).toBe(2) // the stored turn's two calls; the re-run's first was answered by the recording
  expect(result.identical).toBe(false)

  await expect(rerunTurn(h.engine, turn.id, { afterDivergence: 'live' })).rejects.toMatchObject({ name: 'InvalidArgumentError', argument: 'liveModel' })
})

test('the recorded model with live tools goes on past a changed tool result and reports exactly that tool’s drift', async () => {
  h = await createHarness({ tools: { add, lookup } })
  h.server.tools([
    { name: 'add', input: { a: 1, b: 2 }, id: 'call_add' },
    { name: 'lookup', input: { city: 'Oslo' }, id: 'call_city' },
  ])
  h.server.text('3, and Oslo has 1000 people.')
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'Add 1 and 2, and look Oslo up.')
  expect((await turn.done).outcome).toBe('completed')

  const changed = tool({ description: 'Look a city up', inputSchema: z.object({ city: z.string() }), execute: async ({ city }) => ({ city, population: 700000 }) })
  const result = await rerunTurn(h.engine, turn.id, { tools: { add, lookup: changed }, toolDrift: 'continue' })

  expect(result.rerun.outcome).toBe('completed')
  expect(result.toolDrift).toEqual([
    {
      step: 1,
      toolName: 'lookup',
      callId: 'call_city',
      input: { city: 'Oslo' },
      recorded: { type: 'json', value: { city: 'Oslo', population: 1000 } },
      live: { type: 'json', value: { city: 'Oslo', population: 700000 } },
    },
  ])
  // The recorded answer went on: the same final text, no provider call.
  expect(trajectoryOf(result.rerun).finalText).toBe('3, and Oslo has 1000 people.')
  expect(h.server.calls).toBe(2)

  // Without it the run stops at the drift, as before.
  const stopped = await rerunTurn(h.engine, turn.id, { tools: { add, lookup: changed } })
  expect(stopped.rerun.error).toMatchObject({ name: 'RecordingDivergedError' })
  expect(stopped.toolDrift).toEqual([])
})
