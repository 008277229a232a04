/**
 * An assistant message is written with its first part: a step that overflows before any part
 * leaves no empty message behind the summary; a turn that fails before any part still stores
 * one assistant message, carrying the error.
 */
import { createHarness, type Harness } from '../support/harness'

let h: Harness | undefined
afterEach(async () => {
  await h?.close()
  h = undefined
})

test('an overflowed step leaves no empty assistant message: user, summary, answer', async () => {
  h = await createHarness()
  h.server.error(400, { error: { message: "This model's maximum context length is 8192 tokens. However, your messages resulted in 9120 tokens.", code: 'context_length_exceeded' } })
  h.server.text('summary')
  h.server.text('continued')
  const session = await h.engine.createSession()
  const result = await h.engine.prompt(session.id, 'x').done
  expect(result.outcome).toBe('completed')
  const messages = await h.engine.messages(session.id)
  expect(messages.map((m) => (m.info.summary ? 'summary' : m.info.role))).toEqual(['user', 'summary', 'assistant'])
  expect(messages.filter((m) => m.parts.length === 0)).toEqual([])
  expect(h.events.filter((e) => e.type === 'message.updated').map((e) => (e as { info: { id: string } }).info.id).filter((id) => !messages.some((m) => m.info.id === id))).toEqual([])
})

test('a turn that fails before any part stores one assistant message with the error', async () => {
  h = await createHarness()
  h.server.error(401, { error: { message: 'bad key' } })
  const session = await h.engine.createSession()
  const result = await h.engine.prompt(session.id, 'x').done
  expect(result.outcome).toBe('failed')
  const messages = await h.engine.messages(session.id)
  expect(messages.map((m) => m.info.role)).toEqual(['user', 'assistant'])
  expect(messages[1].parts).toEqual([])
  expect(messages[1].info.error).toMatchObject({ name: 'ProviderAuthError' })
})
