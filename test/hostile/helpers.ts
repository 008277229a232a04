/**
 * Shared checks of the hostile tests: no part left open, SSE lines built by hand.
 */
import type { Engine } from '../../src'
import type { Part } from '../../src/core/types'

/** Parts still open in the database: text or reasoning without `time.end`, tools pending or running. */
export async function openParts(engine: Engine, sessionId: string): Promise<Part[]> {
  const messages = await engine.messages(sessionId)
  return messages.flatMap((m) => m.parts).filter(isOpen)
}

export function isOpen(part: Part): boolean {
  if (part.type === 'text' || part.type === 'reasoning') return part.time.end === undefined
  if (part.type === 'tool') return part.state.status === 'pending' || part.state.status === 'running'
  return false
}

/** One SSE event carrying `data` (an object is JSON-stringified). */
export function sse(data: unknown): string {
  return `data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`
}

/** A chat.completion.chunk with one choice. */
export function choice(delta: Record<string, unknown>, finishReason: string | null = null): Record<string, unknown> {
  return { id: 'chatcmpl-h', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, finish_reason: finishReason }] }
}

/** The usage chunk OpenAI sends last (`choices: []`). */
export function usageChunk(input = 10, output = 5): Record<string, unknown> {
  return { id: 'chatcmpl-h', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [], usage: { prompt_tokens: input, completion_tokens: output, total_tokens: input + output } }
}

/** A whole, well-formed SSE answer with `text`. */
export function sseAnswer(text: string): string {
  return sse(choice({ role: 'assistant', content: text })) + sse(choice({}, 'stop')) + sse(usageChunk()) + sse('[DONE]')
}
