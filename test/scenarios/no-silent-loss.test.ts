/**
 * Nothing lost in silence: an empty summary never replaces the history, a model call that never
 * returns a stream still ends, any stream id closes its part, and an overlong retry delay is
 * refused instead of firing at once.
 */
import { tool, wrapLanguageModel, type LanguageModelMiddleware } from 'ai'
import { z } from 'zod'
import { createEngine } from '../../src'
import { startScriptedServer } from '../../src/testing'
import { createHarness, modelFor, type Harness } from '../support/harness'

let h: Harness
afterEach(async () => {
  await h?.close()
})

const overflow = { error: { message: 'prompt length 9000 is greater than the context length 8192' } }

test('a summary answer with no text fails the compaction; the history stays as it was', async () => {
  h = await createHarness({ retry: { maxAttempts: 1 } })
  h.server.text('first answer')
  const session = await h.engine.createSession()
  expect((await h.engine.prompt(session.id, 'one').done).outcome).toBe('completed')
  h.server.error(400, overflow)
  h.server.push({ type: 'stream', chunks: [{ text: '   ' }] }) // the summary: whitespace only
  const turn = h.engine.prompt(session.id, 'two')
  const result = await turn.done
  expect(result).toMatchObject({ outcome: 'failed', error: { name: 'CompactionFailedError', lastError: { name: 'EmptySummaryError' } } })
  const messages = await h.engine.messages(session.id)
  expect(messages.some((m) => m.info.summary)).toBe(false)
  // The next request still carries the whole history.
  h.server.text('third answer')
  expect((await h.engine.prompt(session.id, 'three').done).outcome).toBe('completed')
  const sent = JSON.stringify(h.server.requests.at(-1)!.body)
  expect(sent).toContain('first answer')
  expect(sent).toContain('one')
})

/** Middleware over the real provider (the AI SDK's own `wrapLanguageModel`). */
function wrapped(h: Harness, middleware: LanguageModelMiddleware) {
  return wrapLanguageModel({ model: modelFor(h.server), middleware })
}

test('a model call that never returns a stream (it ignores the abort signal) ends by the idle timeout', async () => {
  const server = await startScriptedServer() // never called: the adapter hangs before any request
  h = await createHarness({
    streamIdleTimeoutMs: 200,
    retry: { maxAttempts: 1 },
    model: wrapLanguageModel({
      model: modelFor(server),
      middleware: { specificationVersion: 'v3', wrapStream: () => new Promise<never>(() => {}) },
    }),
  })
  await server.close()
  const session = await h.engine.createSession()
  const result = await h.engine.prompt(session.id, 'x').done
  expect(result.outcome).toBe('failed')
  expect(JSON.stringify(result.error)).toContain('StreamIdleTimeoutError')
  expect(h.engine.status(session.id)).toEqual({ type: 'idle' })
})

test('a text stream id containing ":" still closes its part when the step ends (a stream that never ends its text)', async () => {
  h = await createHarness()
  await h.engine.close()
  const renamed = wrapped(h, {
    specificationVersion: 'v3',
    wrapStream: async ({ doStream }) => {
      const { stream, ...rest } = await doStream()
      const rename = new TransformStream({
        transform(part, controller) {
          if (part.type === 'text-end') return // the step's end must close it
          controller.enqueue('id' in part && typeof part.id === 'string' && part.type.startsWith('text') ? { ...part, id: `msg:${part.id}:x` } : part)
        },
      })
      return { stream: stream.pipeThrough(rename), ...rest }
    },
  })
  let release!: () => void
  let started!: () => void
  const running = new Promise<void>((resolve) => (started = resolve))
  const work = tool({
    description: 'Work',
    inputSchema: z.object({}),
    execute: () => {
      started()
      return new Promise<string>((resolve) => (release = () => resolve('done')))
    },
  })
  const engine = await createEngine({ database: h.dbPath, model: renamed, tools: { work } })
  try {
    h.server.tool('work', {}, { text: 'calling the tool' })
    h.server.text('after the tool')
    const session = await engine.createSession()
    const turn = engine.prompt(session.id, 'x')
    await running // the step has ended: its text is closed in the database
    const [, assistant] = await engine.messages(session.id)
    expect(assistant.parts.find((p) => p.type === 'text')).toMatchObject({ text: 'calling the tool', time: { end: expect.any(Number) } })
    release()
    expect((await turn.done).outcome).toBe('completed')
  } finally {
    await engine.close()
  }
})
