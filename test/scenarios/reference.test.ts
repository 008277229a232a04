/**
 * Counterparts of every scenario in opencode's processor test (shared/reference), written
 * against turnchart's API and run through the scripted server and a SQLite file.
 */
import { jsonSchema, tool } from 'ai'
import { createHarness, assistantParts, type Harness } from '../support/harness'
import type { SessionStatus, ToolPart } from '../../src'

let h: Harness
afterEach(async () => {
  await h?.close()
})

test('captures streamed text with one call', async () => {
  h = await createHarness()
  h.server.text('hello')
  const session = await h.engine.createSession()
  const result = await h.engine.prompt(session.id, 'hi').done
  expect(result.outcome).toBe('completed')
  expect(h.server.calls).toBe(1)
  const parts = await assistantParts(h.engine, session.id)
  expect(parts.some((p) => p.type === 'text' && p.text === 'hello')).toBe(true)
  expect(h.server.requests[0].body.messages).toEqual([{ role: 'user', content: 'hi' }])
})

test('usage overflow compacts, keeping the step text and step-finish', async () => {
  h = await createHarness({ limits: { context: 20, output: 10 } })
  h.server.text('after', { usage: { input: 100, output: 0 } })
  h.server.text('summary of it all')
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'compact')
  const result = await turn.done
  expect(result.outcome).toBe('completed')
  const transitions = await h.engine.transitions(turn.id)
  expect(transitions.map((t) => t.to)).toEqual(['step-gate', 'streaming', 'compacting', 'completed'])
  const messages = await h.engine.messages(session.id)
  const first = messages[1]
  expect(first.parts.some((p) => p.type === 'text' && p.text === 'after')).toBe(true)
  expect(first.parts.some((p) => p.type === 'step-finish')).toBe(true)
  const summary = messages.find((m) => m.info.summary)!
  expect(summary.parts.map((p) => p.type)).toEqual(['compaction', 'text'])
  expect(h.server.calls).toBe(2)
})

test('reasoning is reset across a retried 503: "two", never "onetwo"', async () => {
  h = await createHarness()
  h.server.push({ type: 'stream', chunks: [{ reasoning: 'one' }], end: 'reset' })
  h.server.reasoning('two', 'done')
  const session = await h.engine.createSession()
  const result = await h.engine.prompt(session.id, 'reason').done
  expect(result.outcome).toBe('completed')
  expect(result.error).toBeUndefined()
  expect(h.server.calls).toBe(2)
  const reasoning = (await assistantParts(h.engine, session.id)).filter((p) => p.type === 'reasoning')
  expect(reasoning.map((p) => (p as { text: string }).text)).toEqual(['one', 'two'])
  for (const part of reasoning) expect((part as { time: { end?: number } }).time.end).toBeDefined()
})

test('503 error body then success: reasoning of the failed attempt stays closed and separate', async () => {
  h = await createHarness()
  h.server.error(503, { error: 'boom' }, { 'retry-after-ms': '0' })
  h.server.reasoning('two')
  const session = await h.engine.createSession()
  await h.engine.prompt(session.id, 'reason').done
  expect(h.server.calls).toBe(2)
  const reasoning = (await assistantParts(h.engine, session.id)).filter((p) => p.type === 'reasoning')
  expect(reasoning.some((p) => (p as { text: string }).text === 'two')).toBe(true)
  expect(reasoning.some((p) => (p as { text: string }).text === 'onetwo')).toBe(false)
})

test('400 no_kv_space is not retried: one call, turn failed, APIError on the message', async () => {
  h = await createHarness()
  h.server.error(400, { error: { message: 'no_kv_space' } })
  const session = await h.engine.createSession()
  const result = await h.engine.prompt(session.id, 'json').done
  expect(result.outcome).toBe('failed')
  expect(h.server.calls).toBe(1)
  const messages = await h.engine.messages(session.id)
  expect(messages[1].info.error?.name).toBe('APIError')
  expect(messages[1].info.error?.statusCode).toBe(400)
})

test('429 too_many_requests is retried: two calls, no error', async () => {
  h = await createHarness()
  h.server.error(429, { type: 'error', error: { type: 'too_many_requests' } })
  h.server.text('after')
  const session = await h.engine.createSession()
  const result = await h.engine.prompt(session.id, 'retry json').done
  expect(result.outcome).toBe('completed')
  expect(h.server.calls).toBe(2)
  const messages = await h.engine.messages(session.id)
  expect(messages[1].parts.some((p) => p.type === 'text' && p.text === 'after')).toBe(true)
  expect(messages[1].info.error).toBeUndefined()
})

test('publishes one retry status per attempt: [1]', async () => {
  h = await createHarness()
  h.server.error(503, { error: 'boom' })
  h.server.text('')
  const session = await h.engine.createSession()
  const attempts: number[] = []
  h.engine.subscribe((e) => {
    if (e.type === 'session.status' && e.sessionId === session.id && e.status.type === 'retry') attempts.push(e.status.attempt)
  })
  const result = await h.engine.prompt(session.id, 'retry').done
  expect(result.outcome).toBe('completed')
  expect(h.server.calls).toBe(2)
  expect(attempts).toEqual([1])
})

test('structured context_length_exceeded compacts, no error on the message', async () => {
  h = await createHarness()
  h.server.error(400, { type: 'error', error: { code: 'context_length_exceeded' } })
  h.server.text('the summary')
  h.server.text('answer after compaction')
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'compact json')
  const result = await turn.done
  expect(result.outcome).toBe('completed')
  expect((await h.engine.transitions(turn.id)).map((t) => t.to)).toEqual(['step-gate', 'streaming', 'compacting', 'step-gate', 'streaming', 'completed'])
  const messages = await h.engine.messages(session.id)
  for (const m of messages) expect(m.info.error).toBeUndefined()
  // the step after compaction is sent the summary, not the old history
  expect(JSON.stringify(h.server.requests[2].body.messages)).toContain('the summary')
})

test('a pending tool aborted becomes error "Tool execution aborted" with time.end', async () => {
  h = await createHarness({
    tools: {
      bash: tool({
        description: 'Run shell commands',
        inputSchema: jsonSchema<{ cmd: string }>({ type: 'object', properties: { cmd: { type: 'string' } }, required: ['cmd'] }),
        execute: () => new Promise<{ output: string }>(() => {}),
      }),
    },
  })
  h.server.tool('bash', { cmd: 'pwd' })
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'tool abort')
  await h.waitForEvent((e) => e.type === 'turn.transition' && e.to === 'tool-running')
  turn.abort()
  const result = await turn.done
  expect(result.outcome).toBe('aborted')
  expect(h.server.calls).toBe(1)
  const call = (await assistantParts(h.engine, session.id)).find((p): p is ToolPart => p.type === 'tool')!
  expect(call.state.status).toBe('error')
  if (call.state.status === 'error') {
    expect(call.state.error).toBe('Tool execution aborted')
    expect(call.state.time.end).toBeDefined()
    expect(call.state.metadata).toEqual({ interrupted: true })
  }
})

test('abort records MessageAbortedError, publishes the error and goes idle', async () => {
  h = await createHarness()
  h.server.hang()
  const session = await h.engine.createSession()
  const errors: string[] = []
  h.engine.subscribe((e) => {
    if (e.type === 'session.error' && e.sessionId === session.id) errors.push(e.error.name)
  })
  const turn = h.engine.prompt(session.id, 'abort')
  await h.server.waitForCall(1)
  await h.engine.abort(session.id)
  const result = await turn.done
  expect(result.outcome).toBe('aborted')
  expect(result.error?.name).toBe('MessageAbortedError')
  const messages = await h.engine.messages(session.id)
  expect(messages[1].info.role).toBe('assistant')
  expect(messages[1].info.error?.name).toBe('MessageAbortedError')
  expect(h.engine.status(session.id)).toEqual<SessionStatus>({ type: 'idle' })
  expect(errors).toContain('MessageAbortedError')
})

test('stopping the actor without abort() gives the same result', async () => {
  h = await createHarness()
  h.server.hang()
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'interrupt')
  await h.server.waitForCall(1)
  turn.actor.stop()
  const result = await turn.done
  expect(result.outcome).toBe('aborted')
  const messages = await h.engine.messages(session.id)
  expect(messages[1].info.error?.name).toBe('MessageAbortedError')
  expect(h.engine.status(session.id)).toEqual({ type: 'idle' })
  const log = await h.engine.transitions(turn.id)
  expect(log.at(-1)).toMatchObject({ from: 'streaming', event: 'xstate.stop', to: 'aborted' })
  expect((await h.engine.getTurn(turn.id))?.outcome).toBe('aborted')
})
