/**
 * A scripted reply in Gemini's `streamGenerateContent?alt=sse` protocol: one candidate chunk per
 * script chunk (thoughts are `thought: true` text parts, tool calls whole `functionCall` parts),
 * then a chunk with `finishReason` and `usageMetadata`.
 */
import type { ProtocolWriter, ScriptToolCall, StreamContext } from './scripted-stream'

export class GeminiWriter implements ProtocolWriter {
  readonly #responseId: string

  constructor(private readonly context: StreamContext) {
    this.#responseId = `resp_${context.nextId()}_${context.idTag}`
  }

  text(text: string): void {
    this.#candidate([{ text }])
  }

  reasoning(reasoning: string, signature?: string): void {
    this.#candidate([{ text: reasoning, thought: true, ...(signature ? { thoughtSignature: signature } : {}) }])
  }

  raw(raw: string): void {
    this.#data(raw)
  }

  async tool({ name, input, id, signature }: ScriptToolCall): Promise<void> {
    this.#candidate([{ functionCall: { ...(id ? { id } : {}), name, args: parsedArguments(input) }, ...(signature ? { thoughtSignature: signature } : {}) }])
  }

  end(finish: string | undefined): void {
    const usage = this.context.usage
    const usageMetadata = {
      promptTokenCount: usage.input,
      candidatesTokenCount: usage.output - (usage.reasoning ?? 0),
      totalTokenCount: usage.input + usage.output,
      ...(usage.reasoning ? { thoughtsTokenCount: usage.reasoning } : {}),
      ...(usage.cacheRead ? { cachedContentTokenCount: usage.cacheRead } : {}),
    }
    this.#candidate([{ text: '' }], { finishReason: finish ?? 'STOP' }, { usageMetadata })
  }

  #candidate(parts: unknown[], extra: Record<string, unknown> = {}, fields: Record<string, unknown> = {}): void {
    const candidates = [{ content: { parts, role: 'model' }, ...extra, index: 0 }]
    this.#data(JSON.stringify({ candidates, ...fields, modelVersion: this.context.model, responseId: this.#responseId }))
  }

  #data(data: string): void {
    this.context.write(`data: ${data}\r\n\r\n`)
  }
}

/** Gemini sends parsed arguments: a string that is not JSON stays a string. */
function parsedArguments(input: unknown): unknown {
  if (typeof input !== 'string') return input ?? {}
  try {
    return JSON.parse(input)
  } catch {
    return input
  }
}
