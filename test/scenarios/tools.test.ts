/**
 * Tool running: results and errors go back to the model, a throwing tool does not crash the
 * turn, unknown tools and bad input become error parts the model can act on.
 */
import { jsonSchema, tool } from 'ai'
import { z } from 'zod'
import { createHarness, assistantParts, type Harness } from '../support/harness'
import type { ToolPart } from '../../src'

let h: Harness
afterEach(async () => {
  await h?.close()
})

const echo = tool({
  description: 'Echo the text',
  inputSchema: z.object({ text: z.string() }),
  execute: async ({ text }) => ({ echoed: text }),
})

test('a tool result goes back to the model and the turn ends when a step has no tool calls', async () => {
  h = await createHarness({ tools: { echo } })
  h.server.tool('echo', { text: 'ping' })
  h.server.text('done')
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'use echo')
  expect((await turn.done).outcome).toBe('completed')
  expect((await h.engine.transitions(turn.id)).map((t) => t.to)).toEqual(['step-gate', 'streaming', 'tool-running', 'streaming', 'completed'])
  const call = (await assistantParts(h.engine, session.id)).find((p): p is ToolPart => p.type === 'tool')!
  expect(call.state).toMatchObject({ status: 'completed', input: { text: 'ping' }, output: { echoed: 'ping' } })
  const second = h.server.requests[1].body.messages
  expect(second[1]).toMatchObject({ role: 'assistant', tool_calls: [{ id: call.callId, function: { name: 'echo' } }] })
  expect(second[2]).toMatchObject({ role: 'tool', tool_call_id: call.callId })
  expect(JSON.parse(second[2].content)).toEqual({ echoed: 'ping' })
  // tools are declared to the model with their schema
  expect(h.server.requests[0].body.tools[0].function.name).toBe('echo')
})

test('a tool that throws becomes an error part the model sees; the turn goes on', async () => {
  const boom = tool({
    description: 'Fails',
    inputSchema: z.object({}),
    execute: async (): Promise<string> => {
      throw new Error('disk on fire')
    },
  })
  h = await createHarness({ tools: { boom } })
  h.server.tool('boom', {})
  h.server.text('sorry')
  const session = await h.engine.createSession()
  expect((await h.engine.prompt(session.id, 'x').done).outcome).toBe('completed')
  const call = (await assistantParts(h.engine, session.id)).find((p): p is ToolPart => p.type === 'tool')!
  expect(call.state).toMatchObject({ status: 'error', error: 'disk on fire' })
  expect(call.state.status === 'error' && call.state.time.end).toBeTruthy()
  expect(h.server.requests[1].body.messages[2]).toMatchObject({ role: 'tool', content: 'disk on fire' })
})

test('a tool that throws a non-Error value does not crash the engine', async () => {
  const weird = tool({
    description: 'Throws a string',
    inputSchema: z.object({}),
    execute: async (): Promise<string> => {
      throw { code: 42 }
    },
  })
  h = await createHarness({ tools: { weird } })
  h.server.tool('weird', {})
  h.server.text('ok')
  const session = await h.engine.createSession()
  expect((await h.engine.prompt(session.id, 'x').done).outcome).toBe('completed')
  const call = (await assistantParts(h.engine, session.id)).find((p): p is ToolPart => p.type === 'tool')!
  expect(call.state).toMatchObject({ status: 'error', error: 'tool threw a non-Error value: {"code":42}' })
})

test('an unknown tool name becomes an error part naming the available tools', async () => {
  h = await createHarness({ tools: { echo } })
  h.server.tool('nope', { a: 1 })
  h.server.text('ok')
  const session = await h.engine.createSession()
  expect((await h.engine.prompt(session.id, 'x').done).outcome).toBe('completed')
  const call = (await assistantParts(h.engine, session.id)).find((p): p is ToolPart => p.type === 'tool')!
  expect(call.state).toMatchObject({ status: 'error', error: "unknown tool 'nope'; available: echo" })
  expect(h.server.calls).toBe(2)
})

test('input that fails the schema, and input that is not JSON, become error parts', async () => {
  h = await createHarness({ tools: { echo } })
  h.server.tools([{ name: 'echo', input: { text: 5 } }, { name: 'echo', input: '{"text": "unterminated' }])
  h.server.text('ok')
  const session = await h.engine.createSession()
  expect((await h.engine.prompt(session.id, 'x').done).outcome).toBe('completed')
  const calls = (await assistantParts(h.engine, session.id)).filter((p): p is ToolPart => p.type === 'tool')
  expect(calls).toHaveLength(2)
  for (const call of calls) {
    expect(call.state.status).toBe('error')
    if (call.state.status === 'error') expect(call.state.error).toMatch(/^invalid input for tool 'echo'/)
  }
})

test('a tool that runs past its timeout fails with a timeout error and its signal aborts', async () => {
  let signalAborted = false
  const stuck = tool({
    description: 'Never ends',
    inputSchema: jsonSchema<Record<string, never>>({ type: 'object', properties: {} }),
    execute: (_input, { abortSignal }) =>
      new Promise<string>(() => {
        abortSignal?.addEventListener('abort', () => {
          signalAborted = true
        })
      }),
  })
  h = await createHarness({ tools: { stuck }, toolExecution: { timeoutMs: 50 } })
  h.server.tool('stuck', {})
  h.server.text('ok')
  const session = await h.engine.createSession()
  expect((await h.engine.prompt(session.id, 'x').done).outcome).toBe('completed')
  const call = (await assistantParts(h.engine, session.id)).find((p): p is ToolPart => p.type === 'tool')!
  expect(call.state).toMatchObject({ status: 'error', error: "tool 'stuck' timed out after 50 ms" })
  expect(signalAborted).toBe(true)
})

test('aborting while a tool runs aborts its signal and marks it interrupted', async () => {
  let seenSignal: AbortSignal | undefined
  let started!: () => void
  const running = new Promise<void>((resolve) => (started = resolve))
  const wait = tool({
    description: 'Waits for abort',
    inputSchema: z.object({}),
    execute: (_input, { abortSignal }) => {
      seenSignal = abortSignal
      started()
      return new Promise<string>(() => {})
    },
  })
  h = await createHarness({ tools: { wait } })
  h.server.tool('wait', {})
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'x')
  await running
  turn.abort()
  expect((await turn.done).outcome).toBe('aborted')
  expect(seenSignal?.aborted).toBe(true)
})
