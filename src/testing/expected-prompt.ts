/**
 * The prompt a recorded call was sent, rebuilt from the stored turn as the engine built it
 * then: the system prompt, the history before the turn, and the turn's messages as they stood
 * before that call (the steps and summaries of the earlier calls, each step's last finished
 * attempt, with its tool results). A re-run's request is compared with it.
 */
import type { MessageWithParts } from '../core/types'
import { toModelMessages } from '../llm/model-messages'
import { toProviderPrompt, type ProviderMessage } from '../llm/provider-prompt'
import type { RecordedCall, RecordedTurn } from './recorded-turn'
import type { SpecificationVersion } from './stored-stream'

/**
 * @example
 * expectedPrompt(recording, recording.calls[2], 'v3') // [{ role: 'system', … }, { role: 'user', … }, …]
 */
export function expectedPrompt(recording: RecordedTurn, call: RecordedCall, version: SpecificationVersion): ProviderMessage[] {
  const earlier = recording.calls.slice(0, call.call - 1)
  const answered = new Set(earlier.filter((c) => c.kind === 'step').map((c) => `${c.step}:${c.attempt}`))
  const summaries = new Set(earlier.flatMap((c) => (c.summary ? [c.summary.info.id] : [])))
  const before: MessageWithParts[] = []
  for (const message of recording.own) {
    if (message.info.summary) {
      if (summaries.has(message.info.id)) before.push(message)
    } else if (message.info.role === 'user') before.push(message)
    else before.push({ info: message.info, parts: message.parts.filter((p) => answered.has(`${p.step}:${p.attempt}`)) })
  }
  // As the turn's scope: after a summary the model is sent only what follows it.
  const current = toModelMessages(before, { finishedAttemptsOnly: true })
  const messages = before.some((m) => m.info.summary) ? current : [...toModelMessages(recording.history), ...current]
  return toProviderPrompt(recording.options?.system, messages, version)
}
