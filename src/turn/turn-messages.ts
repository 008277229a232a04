/**
 * One turn's messages in memory, in order (its prompt, steers, assistant messages, summaries),
 * and the model's view of them: the history the model needs is built from them without
 * rereading the database each step. A part placed here is handed to the turn's part writer.
 */
import type { ModelMessage } from 'ai'
import { newId } from '../core/ids'
import type { MessageInfo, MessageWithParts, Part, StepFinishPart, StopConditionStep, ToolPart } from '../core/types'
import { toModelMessages, TurnModelMessages } from '../llm/model-messages'
import type { ProviderPromptCache } from '../llm/provider-prompt'
import type { PartWriter } from './part-writer'
import { StepResultsSoFar } from './step-results'

export class TurnMessages {
  /** This turn's messages, in order: the user prompt, assistant messages, summaries. */
  readonly all: MessageWithParts[] = []
  /** Tool parts of the step that streamed last, in call order. */
  stepTools: ToolPart[] = []
  /** Their provider form, each history message and finished step converted once. */
  readonly promptCache: ProviderPromptCache = new WeakMap()
  readonly #ids: { turnId: string; sessionId: string }
  readonly #writer: Pick<PartWriter, 'add' | 'message'>
  /** The session's messages before this turn, as the model sees them. */
  #history: ModelMessage[] = []
  /** The turn's messages as the model sees them, each finished step converted once. */
  readonly #converted = new TurnModelMessages()
  readonly #steps = new StepResultsSoFar()
  #assistant: MessageWithParts | undefined
  /** Assistant messages opened but not written yet: written with their first part, or at the turn's end. */
  readonly #unsaved = new Set<string>()

  constructor(ids: { turnId: string; sessionId: string }, writer: Pick<PartWriter, 'add' | 'message'>) {
    this.#ids = ids
    this.#writer = writer
  }

  /** The session's messages before this turn (from its latest summary), read when its prompt is stored. */
  historyBefore(messages: MessageWithParts[]): void {
    this.#history = toModelMessages(messages)
  }

  /**
   * Rebuilds an interrupted turn's messages from the session's stored ones (recovery): its own
   * in memory, the history before it, the open assistant message and the tool parts of its last
   * step. Returns the turn's own messages.
   */
  restore(messages: MessageWithParts[]): MessageWithParts[] {
    const { before, own } = splitAtTurn(messages, this.#ids.turnId)
    this.#history = toModelMessages(before)
    this.all.push(...own)
    const last = own.at(-1)
    this.#assistant = last && isAssistantAnswer(last) ? last : undefined
    if (this.#assistant) {
      const { step, attempt } = lastAttemptOf(this.#assistant.parts)
      this.stepTools = this.#assistant.parts.filter((p): p is ToolPart => p.type === 'tool' && (p.step ?? 0) === step && (p.attempt ?? 0) === attempt)
    }
    return own
  }

  /** A stored user message joined the turn (its prompt, a steer, a refused answer sent back): the next parts go to a new assistant message after it. */
  joined(message: MessageWithParts): void {
    this.#dropEmptyAssistant()
    this.#assistant = undefined
    this.all.push(message)
  }

  /** The step-finish part of the last step's last attempt, if that attempt finished. */
  lastStepFinish(): StepFinishPart | undefined {
    const parts = this.#assistant?.parts ?? []
    const { step, attempt } = lastAttemptOf(parts)
    return parts.find((p): p is StepFinishPart => p.type === 'step-finish' && (p.step ?? 0) === step && (p.attempt ?? 0) === attempt)
  }

  /** The last step gave a final answer: it finished, and called no tools. */
  lastStepAnswered(): boolean {
    return this.lastStepFinish() !== undefined && this.stepTools.length === 0
  }

  /** The turn's finished steps up to `step`, as stop conditions read them. */
  stepResults(step: number): StopConditionStep[] {
    return this.#steps.upTo(step, () => this.assistantMessages())
  }

  /** The messages to send for the next LLM call. */
  modelMessages(): ModelMessage[] {
    const fromSummary = this.all.some((m) => m.info.summary)
    const current = this.#converted.convert(this.all)
    return fromSummary || this.#history.length === 0 ? current : [...this.#history, ...current]
  }

  /** The assistant message new parts go to; opened on first use (and after a summary). */
  assistantMessage(): MessageWithParts {
    if (!this.#assistant) {
      this.#assistant = { info: this.#info('assistant', Date.now()), parts: [] }
      this.all.push(this.#assistant)
      // Written with its first part: a step that overflows before any part leaves no empty message.
      this.#unsaved.add(this.#assistant.info.id)
    }
    return this.#assistant
  }

  /** The assistant messages of this turn (a compaction splits a turn into two). */
  assistantMessages(): MessageWithParts[] {
    return this.all.filter(isAssistantAnswer)
  }

  /**
   * Adds `part` to `message`; returns the message's info when it is not written yet (this is its
   * first part), which the caller hands to the writer with the part.
   */
  placePart(message: MessageWithParts, part: Part): MessageInfo | undefined {
    message.parts.push(part)
    if (!this.#unsaved.delete(message.info.id)) return undefined
    return message.info
  }

  /** Persists a message's info (with the next flush) and publishes it. */
  saveMessage(info: MessageInfo): void {
    this.#unsaved.delete(info.id)
    this.#writer.message(info)
  }

  /** Stores a compaction summary; the next step starts a new assistant message after it. */
  addSummary(text: string, auto: boolean): MessageWithParts {
    this.#dropEmptyAssistant()
    const now = Date.now()
    const summary: MessageWithParts = { info: { ...this.#info('assistant', now), summary: true, time: { created: now, completed: now }, finish: 'stop' }, parts: [] }
    this.all.push(summary)
    this.saveMessage(summary.info)
    const part = { id: newId('prt', now), sessionId: this.#ids.sessionId, messageId: summary.info.id }
    for (const added of [
      { ...part, type: 'compaction', auto, time: { start: now } },
      { ...part, id: newId('prt', now), type: 'text', text, time: { start: now, end: now } },
    ] as const)
      this.#writer.add(added, this.placePart(summary, added))
    this.#assistant = undefined
    return summary
  }

  #info(role: 'assistant', now: number): MessageInfo {
    return { id: newId('msg', now), sessionId: this.#ids.sessionId, role, turnId: this.#ids.turnId, time: { created: now } }
  }

  /** The open assistant message of a step that failed before any part (an overflow), never written: forgotten. */
  #dropEmptyAssistant(): void {
    const open = this.#assistant
    if (!open || open.parts.length > 0 || !this.#unsaved.has(open.info.id)) return
    this.#unsaved.delete(open.info.id)
    this.all.splice(this.all.indexOf(open), 1)
    this.#assistant = undefined
  }
}

/** The last step of `parts` and that step's last attempt (a part without a step counts as step 0): one pass, no arrays. */
function lastAttemptOf(parts: readonly Part[]): { step: number; attempt: number } {
  let step = 0
  let attempt = 0
  for (const part of parts) {
    const partStep = part.step ?? 0
    const partAttempt = part.attempt ?? 0
    if (partStep > step) [step, attempt] = [partStep, partAttempt]
    else if (partStep === step && partAttempt > attempt) attempt = partAttempt
  }
  return { step, attempt }
}

/** A session's messages split at a turn's first one: the history before it, and the turn's own. */
function splitAtTurn(messages: MessageWithParts[], turnId: string): { before: MessageWithParts[]; own: MessageWithParts[] } {
  const first = messages.findIndex((m) => m.info.turnId === turnId)
  return first < 0 ? { before: messages, own: [] } : { before: messages.slice(0, first), own: messages.slice(first) }
}

const isAssistantAnswer = (m: MessageWithParts) => m.info.role === 'assistant' && !m.info.summary

/**
 * The assistant messages of a turn among a session's messages (what `restore` makes
 * `assistantMessages()`): recovery closes the work open in the last one.
 */
export function turnAssistants(messages: MessageWithParts[], turnId: string): MessageWithParts[] {
  return splitAtTurn(messages, turnId).own.filter(isAssistantAnswer)
}
