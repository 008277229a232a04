/**
 * What differs between a recorded request's prompt and a re-run's, in a sentence: the system
 * prompt, a tool result, the user's message, or the number of messages (another number of
 * steps, a compaction where there was none).
 */
import { canonicalJson } from '../core/input-digest'

type Message = { role: string; content: unknown }
type ContentPart = { type?: string; toolCallId?: string; toolName?: string; output?: { value?: unknown }; text?: string }

/**
 * `undefined` when the prompts are the same (as JSON: bytes as base64, URLs as text).
 *
 * @example
 * promptDifference(recorded, sent) // 'the result of tool call call_1 (add) differs: recorded {"sum":3}, now {"sum":4}'
 */
export function promptDifference(recorded: unknown[], sent: unknown[]): string | undefined {
  const a = asJson(recorded) as Message[]
  const b = asJson(sent) as Message[]
  const systemA = a[0]?.role === 'system' ? a[0] : undefined
  const systemB = b[0]?.role === 'system' ? b[0] : undefined
  if (!same(systemA, systemB)) return `the system prompt differs: recorded ${quote(systemA?.content)}, now ${quote(systemB?.content)}`
  const restA = systemA ? a.slice(1) : a
  const restB = systemB ? b.slice(1) : b
  for (let i = 0; i < Math.max(restA.length, restB.length); i++) {
    const [x, y] = [restA[i], restB[i]]
    if (same(x, y)) continue
    if (!x || !y || x.role !== y.role) {
      return `the recording sent ${restA.length} messages after the system prompt, the run sends ${restB.length}; message ${i + 1} is ${describe(y)} (recorded: ${describe(x)})`
    }
    return `message ${i + 1} (${x.role}) differs: ${partDifference(x, y)}`
  }
  return undefined
}

function partDifference(x: Message, y: Message): string {
  const partsA = contentParts(x.content)
  const partsB = contentParts(y.content)
  for (let j = 0; j < Math.max(partsA.length, partsB.length); j++) {
    const [p, q] = [partsA[j], partsB[j]]
    if (same(p, q)) continue
    if (p?.type === 'tool-result' && q?.type === 'tool-result' && p.toolCallId === q.toolCallId) {
      return `the result of tool call ${p.toolCallId} (${p.toolName}) differs: recorded ${quote(p.output?.value)}, now ${quote(q.output?.value)}`
    }
    return `part ${j + 1} is ${quote(q)} (recorded: ${quote(p)})`
  }
  return `${quote(y.content)} (recorded: ${quote(x.content)})`
}

function contentParts(content: unknown): ContentPart[] {
  if (typeof content === 'string') return [{ type: 'text', text: content }]
  return Array.isArray(content) ? (content as ContentPart[]) : []
}

function describe(message: Message | undefined): string {
  if (!message) return 'nothing'
  const text = contentParts(message.content)
    .map((p) => (p.type === 'text' ? p.text : p.type === 'tool-result' ? `result of ${p.toolCallId}` : p.type === 'tool-call' ? `call of ${p.toolName}` : p.type))
    .join(', ')
  return `a ${message.role} message (${truncate(text ?? '', 80)})`
}

/** Equal as JSON, whatever the order of an object's keys (a tool's output read back from the store keeps its own). */
function same(a: unknown, b: unknown): boolean {
  return canonicalJson(a) === canonicalJson(b)
}

function quote(value: unknown): string {
  return value === undefined ? 'nothing' : truncate(typeof value === 'string' ? JSON.stringify(value) : JSON.stringify(value) ?? String(value), 160)
}

function truncate(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text
}

/** A value as JSON would carry it: bytes as base64, URLs and dates as their text, no undefined. */
function asJson(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value, (_key, v: unknown) => (v instanceof Uint8Array ? Buffer.from(v).toString('base64') : v)) ?? 'null')
}
