/**
 * Debugging and evals from stored turns (docs/debugging-and-evals.md), end to end and without
 * an API key (a scripted OpenAI-compatible server on loopback stands in for the provider):
 *
 *   npm run example:rerun
 *
 * 1. "Production": an agent turn with a tool call, a rate limit that is retried, and the
 *    answer, stored in a SQLite file.
 * 2. The same turn re-run on a laptop from its recorded responses (`recordedModel`): the same
 *    parts, no provider call.
 * 3. An eval: the turn run again with another system prompt against another model
 *    (`rerunTurn`), with the recorded tool results, and the first part that differs.
 * 4. A cassette: the provider's answers recorded to a JSON file (`recordCassette`) and played
 *    back in a fresh engine (`cassetteModel`), as a test in CI would.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createOpenAICompatible } from '@ai-sdk/openai-compatible'
import { tool } from 'ai'
import { z } from 'zod'
import { createEngine, type Engine, type EngineOptions } from '../../src'
import { cassetteModel, comparableParts, recordCassette, recordedModel, rerunTurn, startScriptedServer, type ScriptedServer } from '../../src/testing'

const weather = tool({
  description: 'The weather in a city',
  inputSchema: z.object({ city: z.string() }),
  execute: async ({ city }) => ({ city, celsius: 21 }),
})
const options = {
  system: 'You answer questions about the weather.',
  tools: { weather },
  retry: { initialDelayMs: 10, maxDelayMs: 50 },
} satisfies Partial<EngineOptions>
const prompt = 'What is the weather in Lisbon?'

/** What the provider answers to the prompt: a tool call, a 429, then the answer. */
function scriptProvider(server: ScriptedServer, answer = 'It is 21 °C in Lisbon.') {
  server.push({ type: 'stream', chunks: [{ reasoning: 'The weather tool knows.' }, { tool: { name: 'weather', input: { city: 'Lisbon' } } }] })
  server.error(429, { error: { message: 'Rate limit reached', type: 'rate_limit_error' } }, { 'retry-after-ms': '20' })
  server.text(answer)
}

async function ask(engine: Engine) {
  const session = await engine.createSession()
  const result = await engine.prompt(session.id, prompt).done
  return { result, messages: await engine.messages(session.id) }
}

export async function main(log: (line: string) => void = console.log): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'turnchart-rerun-example-'))
  const provider = await startScriptedServer()
  const model = createOpenAICompatible({ name: 'provider', baseURL: provider.url, apiKey: 'key', includeUsage: true })('weather-model')
  try {
    // 1. Production: the turn runs against the provider and is stored.
    scriptProvider(provider)
    const production = await createEngine({ database: path.join(dir, 'production.db'), model, ...options })
    const { result } = await ask(production)
    log(`1. production: ${result.outcome}, "${result.text}" (${provider.calls} provider calls)`)

    // 2. On a laptop: a fresh engine answered by the stored turn's responses.
    const laptop = await createEngine({ model: await recordedModel(production, result.turnId), ...options })
    const rerun = await ask(laptop)
    const same = JSON.stringify(comparableParts(rerun.messages)) === JSON.stringify(comparableParts((await production.messages(result.sessionId))))
    log(`2. re-run from the recorded responses: ${rerun.result.outcome}, the same parts: ${same} (still ${provider.calls} provider calls)`)
    await laptop.close()

    // 3. An eval of a new system prompt against another model, on the same traffic.
    const candidate = await startScriptedServer()
    candidate.push({ type: 'stream', chunks: [{ tool: { name: 'weather', input: { city: 'Lisbon' } } }] })
    candidate.text('21 °C.')
    const other = createOpenAICompatible({ name: 'candidate', baseURL: candidate.url, includeUsage: true })('candidate-model')
    const evaluation = await rerunTurn(production, result.turnId, { model: other, system: 'Answer in three words at most.' })
    const index = evaluation.firstDifference
    log(`3. eval: ${evaluation.identical ? 'no difference' : `part ${index + 1} differs: ${describe(evaluation.original.parts[index])} → ${describe(evaluation.rerun.parts[index])}`}`)
    await candidate.close()
    await production.close()

    // 4. A cassette: the provider's answers recorded once, then played back with no provider.
    scriptProvider(provider)
    const file = path.join(dir, 'weather.cassette.json')
    const recording = await createEngine({ model: recordCassette(model, { file, secrets: ['key'] }), ...options })
    await ask(recording)
    await recording.close()
    const calls = provider.calls
    const replay = await createEngine({ model: cassetteModel(file), ...options })
    const replayed = await ask(replay)
    log(`4. cassette: ${path.basename(file)} holds ${cassetteModel(file).cassette.calls.length} calls; played back: ${replayed.result.outcome}, "${replayed.result.text}" (${provider.calls - calls} provider calls)`)
    await replay.close()
  } finally {
    await provider.close()
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

function describe(part: { type: string; text?: string } | undefined): string {
  if (!part) return 'nothing'
  return part.text !== undefined ? `${part.type} "${part.text}"` : part.type
}

if (require.main === module) {
  main().catch((error: unknown) => {
    console.error(error)
    process.exitCode = 1
  })
}
