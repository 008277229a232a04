/**
 * What `turn.done` adds to the outcome: the turn's usage (its steps and compactions) and the
 * text of its last step. (The turn log writes the same usage on the turn row with its final row.)
 */
import { usageOfMessages } from '../core/usage'
import type { TurnScope } from './turn-scope'
import type { MessageWithParts, TransitionRecord, TurnUsage } from '../core/types'

/**
 * The text parts of the last step of the turn's last assistant message (the final answer of
 * a completed turn), joined.
 *
 * @example
 * finalText(scope) // 'Here is what I found.'
 */
function finalText(scope: TurnScope): string {
  return finalTextOf(scope.messages.assistantMessages())
}

/** `finalText` of stored messages: the last assistant message that is not a summary. */
export function finalTextOf(messages: MessageWithParts[]): string {
  const last = messages.filter((m) => m.info.role === 'assistant' && !m.info.summary).at(-1)
  if (!last) return ''
  const step = Math.max(0, ...last.parts.map((p) => p.step ?? 0))
  const attempt = Math.max(0, ...last.parts.filter((p) => (p.step ?? 0) === step).map((p) => p.attempt ?? 0))
  return last.parts
    .filter((p) => p.type === 'text' && (p.step ?? 0) === step && (p.attempt ?? 0) === attempt)
    .map((p) => (p as { text: string }).text)
    .join('')
}

/**
 * After the turn's last write: what `turn.done` adds, from the messages in memory (the scope
 * holds every message of the turn, a recovered turn's earlier ones too, as stored by now).
 */
export function turnResult(scope: TurnScope): { usage: TurnUsage; text: string } {
  return { usage: usageOfMessages(scope.turnId, scope.messages.all.map((m) => m.info)), text: finalText(scope) }
}

/**
 * A turn's structured output from its log: the payload of the step gate's `gate.complete` with
 * `rule: 'output'` (the row that completed it), as `{ output }`; `{}` when there is none.
 *
 * @example
 * structuredOutputOf(await store.transitions.list(turnId)) // { output: { city: 'Paris' } }
 */
export function structuredOutputOf(transitions: TransitionRecord[]): { output?: unknown } {
  const row = [...transitions].reverse().find((t) => t.event === 'gate.complete' && t.payload?.rule === 'output')
  return row && 'output' in row.payload ? { output: row.payload.output } : {}
}
