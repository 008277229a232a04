/**
 * Context overflow and compaction: each provider wording compacts instead of failing, and the
 * guards (auto: false, a summary that itself overflows, the per-turn bound) end the turn with
 * a ContextOverflowError instead of looping.
 */
import { createHarness, type Harness } from '../support/harness'

let h: Harness
afterEach(async () => {
  await h?.close()
})

const overflowBodies: Array<[string, number, unknown]> = [
  ['OpenAI context_length_exceeded', 400, { error: { message: "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.", type: 'invalid_request_error', code: 'context_length_exceeded' } }],
  ['Anthropic prompt is too long', 400, { type: 'error', error: { type: 'invalid_request_error', message: 'prompt is too long: 210000 tokens > 200000 maximum' } }],
  ['Google input token count', 400, { error: { code: 400, message: 'The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).', status: 'INVALID_ARGUMENT' } }],
  ['exceeds the context window', 400, { error: { message: 'Your input exceeds the context window of this model.' } }],
  ['reduce the length of the messages', 400, { error: { message: 'Please reduce the length of the messages or completion.' } }],
  ['context length exceeded', 400, { error: { message: 'context length exceeded' } }],
  ['413 request entity too large', 413, 'Request Entity Too Large'],
  ['llama.cpp exceeds the available context size', 400, { error: { code: 400, message: 'the request exceeds the available context size, try increasing it', type: 'exceed_context_size_error' } }],
  ['vLLM greater than the context length', 400, { object: 'error', message: 'This model\'s maximum context length is 4096 tokens. However, you requested 5000 tokens. Please reduce the length of the messages.', type: 'BadRequestError' }],
  ['Ollama/other exceeded model token limit', 400, { error: { message: 'exceeded model token limit: 8192 (requested 9000)' } }],
  ['greater than the context length', 400, { error: { message: 'prompt length 9000 is greater than the context length 8192' } }],
]

test.each(overflowBodies)('%s compacts and then continues the turn', async (_name, status, body) => {
  h = await createHarness()
  h.server.error(status, body)
  h.server.text('summary')
  h.server.text('continued')
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'x')
  const result = await turn.done
  expect(result.outcome).toBe('completed')
  expect((await h.engine.transitions(turn.id)).map((t) => t.to)).toEqual(['step-gate', 'streaming', 'compacting', 'step-gate', 'streaming', 'completed'])
  expect(h.server.calls).toBe(3)
  for (const m of await h.engine.messages(session.id)) expect(m.info.error).toBeUndefined()
})

test('compaction.auto: false really means no compaction: the overflow fails the turn', async () => {
  h = await createHarness({ compaction: { auto: false } })
  h.server.error(400, { error: { code: 'context_length_exceeded', message: 'too long' } })
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'x')
  const result = await turn.done
  expect(result.outcome).toBe('failed')
  expect(result.error).toMatchObject({ name: 'ContextOverflowError', reason: 'auto-compaction-off' })
  expect(h.server.calls).toBe(1)
  expect((await h.engine.transitions(turn.id)).map((t) => t.to)).toEqual(['step-gate', 'streaming', 'failed'])
})

test('compaction.auto: false with usage overflow keeps the answer and fails the turn clearly', async () => {
  h = await createHarness({ compaction: { auto: false }, limits: { context: 20, output: 10 } })
  h.server.text('answer', { usage: { input: 100, output: 1 } })
  const session = await h.engine.createSession()
  const result = await h.engine.prompt(session.id, 'x').done
  expect(result.outcome).toBe('failed')
  expect(result.error?.name).toBe('ContextOverflowError')
  const messages = await h.engine.messages(session.id)
  expect(messages[1].parts.some((p) => p.type === 'text' && p.text === 'answer')).toBe(true)
})

test('a summary request that itself overflows fails with ContextOverflowError (no loop)', async () => {
  h = await createHarness()
  h.server.error(400, { error: { code: 'context_length_exceeded', message: 'too long' } })
  h.server.error(400, { error: { code: 'context_length_exceeded', message: 'still too long' } })
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'x')
  const result = await turn.done
  expect(result.outcome).toBe('failed')
  expect(result.error).toMatchObject({ name: 'ContextOverflowError', reason: 'summary-overflow' })
  expect(h.server.calls).toBe(2)
  expect((await h.engine.transitions(turn.id)).map((t) => t.to)).toEqual(['step-gate', 'streaming', 'compacting', 'failed'])
})

test('compactions per turn are bounded: an overflow after the last allowed compaction fails', async () => {
  h = await createHarness({ compaction: { maxPerTurn: 1 } })
  h.server.error(400, { error: { code: 'context_length_exceeded', message: 'too long' } })
  h.server.text('summary')
  h.server.error(400, { error: { code: 'context_length_exceeded', message: 'too long again' } })
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'x')
  const result = await turn.done
  expect(result.outcome).toBe('failed')
  expect(result.error).toMatchObject({ name: 'ContextOverflowError', reason: 'compaction-limit' })
  expect(h.server.calls).toBe(3)
})

test('usage overflow on a tool step runs the tools, compacts, then continues', async () => {
  const { tool } = await import('ai')
  const { z } = await import('zod')
  h = await createHarness({
    limits: { context: 50, output: 10 },
    tools: { read: tool({ description: 'r', inputSchema: z.object({}), execute: async () => 'file contents' }) },
  })
  h.server.tool('read', {}, { usage: { input: 45, output: 5 } })
  h.server.text('summary with file contents')
  h.server.text('final', { usage: { input: 10, output: 2 } })
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'x')
  expect((await turn.done).outcome).toBe('completed')
  expect((await h.engine.transitions(turn.id)).map((t) => t.to)).toEqual(['step-gate', 'streaming', 'tool-running', 'compacting', 'step-gate', 'streaming', 'completed'])
  const messages = await h.engine.messages(session.id)
  expect(messages.map((m) => [m.info.role, !!m.info.summary])).toEqual([['user', false], ['assistant', false], ['assistant', true], ['assistant', false]])
  // the next turn sends only the summary and what follows it
  h.server.text('next')
  await h.engine.prompt(session.id, 'again').done
  const sent = h.server.requests[3].body.messages
  expect(sent[0].content).toContain('summary with file contents')
  expect(JSON.stringify(sent)).not.toContain('"x"')
})

test('a retryable failure of the summary request waits and compacts again', async () => {
  h = await createHarness()
  h.server.error(400, { error: { code: 'context_length_exceeded', message: 'too long' } })
  h.server.error(503, { error: { type: 'overloaded_error', message: 'Overloaded' } })
  h.server.text('the summary')
  h.server.text('continued')
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'x')
  expect((await turn.done).outcome).toBe('completed')
  expect((await h.engine.transitions(turn.id)).map((t) => t.to)).toEqual(['step-gate', 'streaming', 'compacting', 'compaction-retry-waiting', 'compacting', 'step-gate', 'streaming', 'completed'])
  expect(h.events.filter((e) => e.type === 'session.status' && e.status.type === 'retry').map((e) => (e as { status: { attempt: number } }).status.attempt)).toEqual([1])
  expect((await h.engine.messages(session.id)).filter((m) => m.info.summary)).toHaveLength(1)
})

test('summary retries are bounded too: exhausted, the turn fails with CompactionFailedError', async () => {
  h = await createHarness({ retry: { maxAttempts: 2, initialDelayMs: 1, maxDelayMs: 1, jitter: 0 } })
  h.server.error(400, { error: { code: 'context_length_exceeded', message: 'too long' } })
  h.server.error(503, { error: { message: 'server error' } })
  h.server.error(503, { error: { message: 'server error' } })
  const session = await h.engine.createSession()
  const result = await h.engine.prompt(session.id, 'x').done
  expect(result.outcome).toBe('failed')
  expect(result.error).toMatchObject({ name: 'CompactionFailedError', lastError: { name: 'RetriesExhaustedError', reason: 'max-attempts', attempts: 2 } })
  expect(h.server.calls).toBe(3)
})
