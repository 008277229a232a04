/**
 * Tool drift: a re-run whose model stays recorded while its tools run live sends the recorded
 * model a tool result the recording did not have. With drift allowed, the request is compared
 * with the recorded one as if the recorded result had been sent (so the recording goes on) and
 * each such result is reported once: which call, its input, the recorded result, the live one.
 */
import { canonicalJson } from '../core/input-digest'
import type { ToolPart } from '../core/types'
import type { RecordedTurn } from './recorded-turn'

/** A live tool result that is not the recorded one. */
export interface ToolDrift {
  /** The step whose tool call it answers. */
  step: number
  toolName: string
  callId: string
  input: unknown
  /** What the recording's call returned (its model output: `{ type: 'json', value }`, or `{ type: 'error-text', value }`). */
  recorded: unknown
  /** What the live tool returned, as sent to the model. */
  live: unknown
}

type ContentPart = { type?: string; toolCallId?: string; toolName?: string; output?: unknown }
type Message = { role?: string; content?: unknown }

/**
 * `sent` with each tool result that differs from the recorded one at the same place (same
 * message, same part, same call) replaced by the recorded one, and those drifts.
 *
 * @example
 * const { prompt, drifts } = withRecordedToolResults(recording, expected, sent)
 */
export function withRecordedToolResults(recording: RecordedTurn, expected: unknown[], sent: unknown[]): { prompt: unknown[]; drifts: ToolDrift[] } {
  const drifts: ToolDrift[] = []
  const prompt = sent.map((message, i) => {
    const recorded = expected[i] as Message | undefined
    const live = message as Message
    if (!recorded || recorded.role !== live.role || !Array.isArray(live.content) || !Array.isArray(recorded.content)) return message
    const content = (live.content as ContentPart[]).map((part, j) => {
      const other = (recorded.content as ContentPart[])[j]
      if (part?.type !== 'tool-result' || other?.type !== 'tool-result' || part.toolCallId !== other.toolCallId || part.toolName !== other.toolName) return part
      if (canonicalJson(asJson(part.output)) === canonicalJson(asJson(other.output))) return part
      const call = toolPartOf(recording, part.toolCallId!)
      drifts.push({ step: call?.step ?? 0, toolName: part.toolName!, callId: part.toolCallId!, input: call?.state.input, recorded: other.output, live: part.output })
      return other
    })
    return { ...live, content }
  })
  return { prompt, drifts }
}

function toolPartOf(recording: RecordedTurn, callId: string): ToolPart | undefined {
  return recording.own.flatMap((m) => m.parts).find((p): p is ToolPart => p.type === 'tool' && p.callId === callId)
}

function asJson(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value ?? null, (_key, v: unknown) => (v instanceof Uint8Array ? Buffer.from(v).toString('base64') : v)))
}
