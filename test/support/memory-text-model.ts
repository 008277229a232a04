/**
 * A language model that streams one text answer from memory (no HTTP, no other process): the
 * in-process workload of the per-delta bench (bench/delta-cost.cts) and of the part stream's
 * memory test. `delta(i)` is the i-th delta (1-based), a string of its own as a provider's
 * parsed chunk is.
 */
import type { LanguageModelV3, LanguageModelV3StreamPart } from '@ai-sdk/provider'

export function memoryTextModel(deltas: number, delta: (i: number) => string): LanguageModelV3 {
  return {
    specificationVersion: 'v3',
    provider: 'memory',
    modelId: 'memory-1',
    supportedUrls: {},
    doGenerate: () => Promise.reject(new Error('streams only')),
    async doStream() {
      let next = -1
      const stream = new ReadableStream<LanguageModelV3StreamPart>({
        pull(controller) {
          next++
          if (next === 0) return controller.enqueue({ type: 'text-start', id: 't' })
          if (next <= deltas) return controller.enqueue({ type: 'text-delta', id: 't', delta: delta(next) })
          if (next === deltas + 1) return controller.enqueue({ type: 'text-end', id: 't' })
          if (next === deltas + 2) {
            const usage = { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: deltas, text: deltas, reasoning: 0 } }
            return controller.enqueue({ type: 'finish', finishReason: { unified: 'stop', raw: 'stop' }, usage })
          }
          controller.close()
        },
      })
      return { stream }
    },
  }
}
