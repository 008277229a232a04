/**
 * Structured output (`output: Output.object({ schema })`) through a real engine and the
 * OpenAI-compatible provider on loopback: the turn runs its tools, its final answer is parsed
 * and checked at the step gate, `done.output` is the object; an answer that does not match is
 * sent back once with the reasons (the model sees them), and a second miss fails the turn with
 * `StructuredOutputError`. The object is in the log (the gate's row) and in the UI stream.
 */
import { PassThrough } from 'node:stream'
import { Output, tool } from 'ai'
import { z } from 'zod'
import { StructuredOutputError, type TurnResult } from '../../src'
import { showCommand } from '../../src/cli/show'
import { pollTurnStream } from '../../src/ui/poll-turn'
import { sessionPage } from '../../src/viewer/page-views'
import { openReadOnlyStore } from '../../src/store/backends/read-only-store'
import { createHarness, testDialect, type Harness } from '../support/harness'

let h: Harness | undefined
afterEach(async () => {
  await h?.close()
  h = undefined
})

const weather = tool({ description: 'Weather of a city', inputSchema: z.object({ city: z.string() }), execute: async ({ city }) => ({ city, celsius: 21 }) })
const report = Output.object({ schema: z.object({ city: z.string(), celsius: z.number() }) })
const log = async (turnId: string) => (await h!.engine.transitions(turnId)).map((r) => `${r.from} --${r.event}--> ${r.to}`)
const lastUserText = (body: unknown) => {
  const messages = (body as { messages: Array<{ role: string; content: unknown }> }).messages
  return String(messages.filter((m) => m.role === 'user').at(-1)?.content)
}

test('a tool call, then a final answer that matches: done.output is the typed object; the schema went with every call; the log has the gate complete it', async () => {
  h = await createHarness({ tools: { weather } })
  h.server.tool('weather', { city: 'Paris' })
  h.server.text('{"city":"Paris","celsius":21}')
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'weather in Paris?', { output: report })
  const result = await turn.done
  // (typed from the schema: a wrong field name would not compile)
  const celsius: number | undefined = result.output?.celsius
  expect(result.outcome).toBe('completed')
  expect(result.output).toEqual({ city: 'Paris', celsius: 21 })
  expect(celsius).toBe(21)
  expect(h.server.requests.map((r) => (r.body as { response_format?: { type: string } }).response_format?.type)).toEqual(['json_object', 'json_object']) // (the openai-compatible provider's form of a JSON response format)
  expect(await log(result.turnId)).toEqual([
    'idle --turn.start--> step-gate',
    'step-gate --gate.continue--> streaming',
    'streaming --step.finished--> tool-running',
    'tool-running --gate.continue--> streaming',
    'streaming --step.finished--> step-gate',
    'step-gate --gate.complete--> completed',
  ])
  const rows = await h.engine.transitions(result.turnId)
  expect(rows.at(-1)!.payload).toEqual({ rule: 'output', output: { city: 'Paris', celsius: 21 } })
  // the UI stream sends it as a data part before the finish
  const stream = await turn.toUIMessageStreamResponse().text()
  expect(stream).toContain('"type":"data-output","id":"output","data":{"city":"Paris","celsius":21}')
  // and so does the stream read from the rows (a page reattaching to a turn another engine ran)
  const polled: unknown[] = []
  for await (const chunk of pollTurnStream(h.engine, { id: result.turnId, sessionId: session.id }) as unknown as AsyncIterable<unknown>) polled.push(chunk)
  expect(polled).toContainEqual({ type: 'data-output', id: 'output', data: { city: 'Paris', celsius: 21 } })
  if (testDialect !== 'sqlite') return
  // `turnchart show` and the viewer's page read it from the log
  const out = new PassThrough()
  let shown = ''
  out.on('data', (chunk) => (shown += chunk))
  expect(await showCommand([h.dbPath, session.id], { stdout: out, stderr: new PassThrough(), env: { NO_COLOR: '1' } })).toBe(0)
  expect(shown).toContain('output {"city":"Paris","celsius":21}')
  const store = await openReadOnlyStore(h.dbPath)
  try {
    const page = await store.read((s) => sessionPage(s, session.id))
    expect(page!.turns[0].output).toEqual({ city: 'Paris', celsius: 21 })
  } finally {
    await store.close()
  }
})

test('an answer that does not match is sent back once with the reasons; the second answer matches', async () => {
  h = await createHarness({ output: report }) // the engine's default
  h.server.text('{"city":"Paris"}')
  h.server.text('{"city":"Paris","celsius":19}')
  const session = await h.engine.createSession()
  const result = await h.engine.prompt(session.id, 'weather?').done
  expect(result.outcome).toBe('completed')
  expect(result.output).toEqual({ city: 'Paris', celsius: 19 })
  expect(h.server.calls).toBe(2)
  expect(lastUserText(h.server.requests[1].body)).toMatch(/does not match the required output schema: celsius: Invalid input: expected number/)
  expect((await log(result.turnId)).slice(2)).toEqual([
    'streaming --step.finished--> step-gate',
    'step-gate --output.retry--> streaming',
    'streaming --step.finished--> step-gate',
    'step-gate --gate.complete--> completed',
  ])
})

test('a schema failure twice fails the turn with StructuredOutputError carrying the text and the reasons; no third call', async () => {
  h = await createHarness()
  h.server.text('{"city":"Paris"}')
  h.server.text('sunny, 20 degrees')
  const session = await h.engine.createSession()
  const result: TurnResult = await h.engine.prompt(session.id, 'weather?', { output: report }).done
  expect(result.outcome).toBe('failed')
  expect(h.server.calls).toBe(2)
  expect(StructuredOutputError.isInstance(result.error)).toBe(true)
  const error = result.error as unknown as StructuredOutputError
  expect(error).toMatchObject({ text: 'sunny, 20 degrees', attempts: 2 })
  expect(error.reasons[0]).toMatch(/^the answer is not JSON/)
  expect((error.aiSdkError as { name: string }).name).toBe('AI_NoObjectGeneratedError')
  expect(result.output).toBeUndefined()
  expect((await log(result.turnId)).at(-1)).toBe('step-gate --gate.fail--> failed')
})

test('a refusal is the InvalidArgumentError of an output that is no AI SDK Output; experimental_output names output', async () => {
  h = await createHarness()
  const session = await h.engine.createSession()
  expect(() => h!.engine.prompt(session.id, 'x', { output: { schema: {} } as never })).toThrow(/options\.output.*Output\.object/)
  expect(() => h!.engine.prompt(session.id, 'x', { experimental_output: report } as never)).toThrow(/prompt option output/)
})
