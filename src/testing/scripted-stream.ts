/**
 * A streamed reply as a provider's wire protocol writes it: the server plays the script (its
 * delays, holds and end faults) and hands each chunk to the protocol's writer
 * (scripted-openai-chat.ts, scripted-responses.ts, scripted-anthropic.ts, scripted-gemini.ts).
 */
import type { RecordedRequest, ScriptChunk, ScriptUsage } from './scripted-replies'

/** A scripted tool call, as a chunk carries it. */
export type ScriptToolCall = Extract<ScriptChunk, { tool: unknown }>['tool']

/** What a writer is given: the reply's facts, and where its bytes go. */
export interface StreamContext {
  model: string
  request: RecordedRequest
  usage: ScriptUsage
  /** Writes to the response, unless the client went away. */
  write(text: string): void
  /** The reply's delay between two pieces (a tool call's arguments come in pieces too). */
  pause(): Promise<void>
  /** A number for the next id, counted over the server's life, and the server's own tag. */
  nextId(): number
  idTag: string
}

/** One provider's wire protocol: each kind of chunk, and the stream's start and end. */
export interface ProtocolWriter {
  start?(): void
  text(text: string): void
  reasoning(reasoning: string, signature?: string): void
  raw(raw: string): void
  tool(call: ScriptToolCall): Promise<void>
  /** The last events, after every chunk went out: `finish` as the script says, else the protocol's default (`hasTool` picks it). */
  end(finish: string | undefined, hasTool: boolean): void
}

/** A tool call's arguments as sent: an object as JSON, a string as it is (tests send invalid JSON so). */
export function argumentsOf(input: unknown): string {
  return typeof input === 'string' ? input : JSON.stringify(input ?? {})
}

/** Arguments sent in two deltas, as providers stream them. */
export function halves(text: string): [string, string] {
  const half = Math.ceil(text.length / 2)
  return [text.slice(0, half), text.slice(half)]
}

/** A raw SSE line, preceded by `event: <type>` when it is JSON with a `type` (Anthropic, Responses). */
export function typedRawEvent(raw: string): string {
  let type: unknown
  try {
    type = (JSON.parse(raw) as { type?: unknown }).type
  } catch {
    type = undefined
  }
  return `${typeof type === 'string' ? `event: ${type}\n` : ''}data: ${raw}\n\n`
}
