// A LanguageModelV3 that streams from memory (no HTTP, no other process): the in-process
// workloads' model (bench/in-process.mjs). A turn of `steps` steps: each step streams
// `deltas` text deltas, every step but the last then calls the tool once. The step is told by
// the prompt (the tool results it carries), so one model serves any number of sessions, and
// the bare loop and turnchart get the very same parts.
import { TOOL_NAME } from './systems.mjs'

const usage = (output) => ({ inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: output, text: output, reasoning: 0 } })

/** Words of the deltas: 100 distinct strings, as a provider's parsed chunks are strings of their own. */
const WORDS = Array.from({ length: 100 }, (_, i) => `tok${i} `)

export function memoryModel({ steps, deltas }) {
  return {
    specificationVersion: 'v3',
    provider: 'memory',
    modelId: 'memory-1',
    supportedUrls: {},
    doGenerate: () => Promise.reject(new Error('streams only')),
    async doStream({ prompt }) {
      let done = 0
      for (const message of prompt) if (message.role === 'tool') done += message.content.length
      const callsTool = done < steps - 1
      let next = -1
      const stream = new ReadableStream({
        pull(controller) {
          next++
          if (next === 0) return controller.enqueue({ type: 'stream-start', warnings: [] })
          if (next === 1) return controller.enqueue({ type: 'text-start', id: 't' })
          if (next <= deltas + 1) return controller.enqueue({ type: 'text-delta', id: 't', delta: WORDS[next % 100] })
          if (next === deltas + 2) return controller.enqueue({ type: 'text-end', id: 't' })
          if (next === deltas + 3 && callsTool) return controller.enqueue({ type: 'tool-call', toolCallId: `call-${done}`, toolName: TOOL_NAME, input: JSON.stringify({ n: done }) })
          if (next <= deltas + 4) {
            next = deltas + 4
            const finishReason = callsTool ? { unified: 'tool-calls', raw: 'tool_calls' } : { unified: 'stop', raw: 'stop' }
            return controller.enqueue({ type: 'finish', finishReason, usage: usage(deltas) })
          }
          controller.close()
        },
      })
      return { stream }
    },
  }
}
