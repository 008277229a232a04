/**
 * Hostile strings (issue 9, case 3), on SQLite and PostgreSQL: user text, tool inputs and tool
 * outputs with quotes and SQL fragments, NUL bytes, lone UTF-16 surrogates, emoji and 10 MB
 * round-trip exactly through the database (read back with `engine.messages`) and back into
 * the next model request (what the scripted server received). See docs/reliability.md.
 */
import { tool } from 'ai'
import { z } from 'zod'
import type { TextPart, ToolPart } from '../../src/core/types'
import { createHarness, type Harness } from '../support/harness'

const hostile: Array<[string, string]> = [
  ['quotes and SQL', `it's "quoted" \`back\` \\ '); DROP TABLE turnchart_parts; -- /* */ %_ $1 ?`],
  ['NUL bytes', 'before\u0000after\u0000'],
  ['lone surrogates', 'high \uD800 alone, low \uDC00 alone, reversed \uDC00\uD800'],
  ['emoji and other planes', '🦀 👩‍👩‍👧‍👦 🇫🇷 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 e\u0301 \u202Eevil\u202C \uFEFF'],
  ['control characters and line breaks', '\r\n\t\u0007\u001b[31mred\u001b[0m\u2028\u2029'],
  ['JSON lookalikes', '{"type":"text","text":"injected"}\n[DONE]\ndata: {"choices":[]}'],
]

let h: Harness
afterEach(async () => {
  await h?.close()
})

async function roundTrip(value: string, options: Parameters<typeof createHarness>[0] = {}) {
  const seen: unknown[] = []
  h = await createHarness({
    ...options,
    tools: {
      echo: tool({
        description: 'echo',
        inputSchema: z.object({ value: z.string() }),
        execute: async ({ value }) => {
          seen.push(value)
          return { echoed: value }
        },
      }),
    },
  })
  h.server.tool('echo', { value }, { id: 'call_echo' })
  h.server.text(value.length > 1000 ? 'big answer' : value)
  h.server.text('second turn')
  const session = await h.engine.createSession()
  const first = await h.engine.prompt(session.id, value).done
  expect(first.error).toBeUndefined()
  expect(first.outcome).toBe('completed')
  // The tool got the input exactly.
  expect(seen).toHaveLength(1)
  expect(seen[0] === value).toBe(true)

  // Stored and read back exactly.
  const messages = await h.engine.messages(session.id)
  const prompt = messages[0].parts[0] as TextPart
  expect(prompt.text === value).toBe(true)
  const call = messages[1].parts.find((p): p is ToolPart => p.type === 'tool')!
  expect(call.state.status).toBe('completed')
  expect((call.state.input as { value: string }).value === value).toBe(true)
  expect((call.state as { output: { echoed: string } }).output.echoed === value).toBe(true)

  // The next request (step 2 of the turn) carries them exactly; so does the next turn's.
  const second = await h.engine.prompt(session.id, 'again').done
  expect(second.outcome).toBe('completed')
  for (const request of [h.server.requests[1], h.server.requests[2]]) {
    const sent = request.body.messages as Array<{ role: string; content: string | null; tool_calls?: Array<{ function: { arguments: string } }> }>
    expect(sent[0].content === value).toBe(true)
    const assistant = sent.find((m) => m.role === 'assistant' && m.tool_calls)!
    expect(JSON.parse(assistant.tool_calls![0].function.arguments).value === value).toBe(true)
    const toolMessage = sent.find((m) => m.role === 'tool')!
    expect(JSON.parse(toolMessage.content!).echoed === value).toBe(true)
  }
  if (value.length <= 1000) {
    const answer = (await h.engine.messages(session.id))[1].parts.filter((p): p is TextPart => p.type === 'text').map((p) => p.text)
    expect(answer.join('') === value).toBe(true)
    const sentAnswer = (h.server.requests[2].body.messages as Array<{ role: string; content: string | null }>).filter((m) => m.role === 'assistant' && m.content)
    expect(sentAnswer.map((m) => m.content).join('') === value).toBe(true)
  }
}

test.each(hostile)('%s round-trip: prompt, tool input, tool output, answer', async (_name, value) => {
  await roundTrip(value)
})

const big = '🦀'.repeat(1024) + 'x'.repeat(10 * 1024 * 1024) + '\'";--'

test('a 10 MB prompt, tool input and tool output round-trip (toolExecution.maxOutputBytes raised)', async () => {
  await roundTrip(big, { toolExecution: { maxOutputBytes: 32 * 1024 * 1024 } })
}, 120_000) // ~15 s alone; under CI's load it has taken over 30 s

test('a 10 MB tool output under the default maxOutputBytes is truncated, saying so (the documented replacement)', async () => {
  h = await createHarness({
    tools: { big: tool({ description: 'big', inputSchema: z.object({}), execute: async () => ({ value: big }) }) },
  })
  h.server.tool('big', {})
  h.server.text('ok')
  const session = await h.engine.createSession()
  expect((await h.engine.prompt(session.id, 'big').done).outcome).toBe('completed')
  const call = (await h.engine.messages(session.id))[1].parts.find((p): p is ToolPart => p.type === 'tool')!
  const output = (call.state as { output: string }).output
  expect(typeof output).toBe('string')
  expect(output).toMatch(/\n\[output truncated: \d+ bytes, limit 100000\]$/)
  expect(Buffer.byteLength(output)).toBeLessThanOrEqual(100_000)
  const toolMessage = h.server.requests[1].body.messages.find((m: { role: string }) => m.role === 'tool')
  expect(toolMessage.content).toBe(output)
}, 30_000)
