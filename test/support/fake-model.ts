/**
 * A fake `LanguageModelV3` for unit tests of the model's callers (stream step, summarizer):
 * `doStream` answers with a `ReadableStream` of the stream parts a test scripts, so a test
 * decides every chunk, where the stream breaks and whether it ever ends. No HTTP, no provider.
 */
import type { LanguageModelV3, LanguageModelV3CallOptions, LanguageModelV3StreamPart, LanguageModelV3Usage } from '@ai-sdk/provider'

/** One scripted item of a stream: a part, a throw (the stream errors there), or a stall (no more chunks, never closes). */
export type ScriptItem = LanguageModelV3StreamPart | { throw: unknown } | { stall: true }

export interface FakeModel extends LanguageModelV3 {
  /** The options of each `doStream` call, in order. */
  readonly calls: LanguageModelV3CallOptions[]
}

/**
 * @example
 * const model = fakeModel([{ type: 'text-start', id: 't' }, ...finish()])
 */
export function fakeModel(script: ScriptItem[], options: { rejectWith?: unknown } = {}): FakeModel {
  const calls: LanguageModelV3CallOptions[] = []
  return {
    specificationVersion: 'v3',
    provider: 'fake',
    modelId: 'fake-1',
    supportedUrls: {},
    calls,
    doGenerate: () => Promise.reject(new Error('the fake model only streams')),
    async doStream(call) {
      calls.push(call)
      if (options.rejectWith !== undefined) throw options.rejectWith
      let next = 0
      const stream = new ReadableStream<LanguageModelV3StreamPart>({
        pull(controller) {
          const item = script[next++]
          if (item === undefined) return controller.close()
          if ('throw' in item) return controller.error(item.throw)
          if ('stall' in item) return new Promise<void>(() => undefined) // a silent provider
          controller.enqueue(item)
        },
      })
      return { stream }
    },
  }
}

export const usage = (input: number, output: number): LanguageModelV3Usage => ({
  inputTokens: { total: input, noCache: input, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: output, text: output, reasoning: 0 },
})

/** The `finish` part of a stream. */
export const finish = (finishReason: 'stop' | 'tool-calls' | 'length' = 'stop', input = 10, output = 5): LanguageModelV3StreamPart => ({
  type: 'finish',
  finishReason: { unified: finishReason, raw: finishReason },
  usage: usage(input, output),
})

/** A whole text block: start, one delta per piece, end. */
export const text = (id: string, ...pieces: string[]): LanguageModelV3StreamPart[] => [
  { type: 'text-start', id },
  ...pieces.map((delta): LanguageModelV3StreamPart => ({ type: 'text-delta', id, delta })),
  { type: 'text-end', id },
]
