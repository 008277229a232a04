/**
 * The cost of one streamed delta, in process: one step of 20,000 text deltas from a model that
 * streams from memory, on `:memory:` SQLite, with one `textStream` reader and a chat handler's
 * engine-wide UI stream reading along. Prints µs per delta, wall and CPU (user + system: less
 * moved by other processes on a loaded machine), median of 7 runs after a warm-up.
 *
 *   node bench/delta-cost.mjs
 */
import { memoryTextModel } from '../test/support/memory-text-model'
import { createEngine, toUIMessageStream } from '../src'

const deltas = Number(process.env.DELTAS ?? 20_000)

async function drain(stream: ReadableStream<unknown>): Promise<number> {
  let n = 0
  for await (const _ of stream as unknown as AsyncIterable<unknown>) n++
  return n
}

async function once(): Promise<{ wall: number; cpu: number }> {
  const engine = await createEngine({ database: ':memory:', model: memoryTextModel(deltas, () => 'word '), recovery: { onOpen: false, intervalMs: 0 } })
  const session = await engine.createSession()
  const started = process.hrtime.bigint()
  const cpuStart = process.cpuUsage()
  const turn = engine.prompt(session.id, 'go')
  const readers = [drain(turn.textStream), drain(toUIMessageStream(engine, turn))]
  const result = await turn.done
  await Promise.all(readers)
  const elapsed = Number(process.hrtime.bigint() - started) / 1000
  const cpu = process.cpuUsage(cpuStart)
  if (result.outcome !== 'completed') throw new Error(`the turn ended ${result.outcome}`)
  await engine.close()
  return { wall: elapsed / deltas, cpu: (cpu.user + cpu.system) / deltas }
}

async function main(): Promise<void> {
  await once()
  const runs: Array<{ wall: number; cpu: number }> = []
  for (let i = 0; i < 7; i++) runs.push(await once())
  const median = (values: number[]) => Number(values.sort((a, b) => a - b)[3].toFixed(2))
  console.log(JSON.stringify({ deltas, usPerDelta: median(runs.map((r) => r.wall)), cpuUsPerDelta: median(runs.map((r) => r.cpu)) }))
}

void main()
