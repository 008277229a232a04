/**
 * A turn's UI message stream as a test compares two runs of it: the chunks in order, ids and
 * times set aside (message and part ids, the turn id, a retry's deadline), adjacent deltas of
 * one part merged (how a provider split its text is not what a user sees).
 */
import { toUIMessageStream, type Engine } from '../../src'

type Chunk = Record<string, unknown> & { type: string }

/** Starts reading the turn's UI stream now (call it in the tick `engine.prompt` returns); resolves with its chunks. */
export function collectUIChunks(engine: Engine, turn: { id: string; sessionId: string; done?: Promise<unknown> }): Promise<Chunk[]> {
  const reader = toUIMessageStream(engine, turn).getReader()
  return (async () => {
    const chunks: Chunk[] = []
    for (;;) {
      const { done, value } = await reader.read()
      if (done) return chunks
      chunks.push(value as Chunk)
    }
  })()
}

const setAside = new Set(['id', 'messageId', 'turnId', 'retryAt'])

export function comparableChunks(chunks: Chunk[]): Chunk[] {
  const merged: Chunk[] = []
  for (const chunk of chunks) {
    const last = merged.at(-1)
    if (last && chunk.type.endsWith('-delta') && last.type === chunk.type && last.id === chunk.id) {
      merged[merged.length - 1] = { ...last, delta: `${String(last.delta)}${String(chunk.delta)}` }
    } else merged.push(chunk)
  }
  return merged.map((chunk) => strip(chunk) as Chunk)
}

function strip(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(strip)
  if (typeof value !== 'object' || value === null) return value
  return Object.fromEntries(Object.entries(value).filter(([key]) => !setAside.has(key)).map(([key, v]) => [key, strip(v)]))
}
