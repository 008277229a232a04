/**
 * Stored messages and parts → the AI SDK's `ModelMessage[]`.
 *
 * Rules: history starts at the latest compaction summary; of each step only the last
 * attempt's parts are sent (a failed attempt's text stays stored, closed, but the model never
 * sees half an answer twice); a step's tool calls are followed by one tool message with their
 * results, errors included, so the model can act on them.
 *
 * Within a running turn (`finishedAttemptsOnly`), an attempt without a `step-finish` is one
 * that failed and is being retried: it is not sent at all, or the model would take its half
 * answer as its own words and continue them. (A step interrupted by a crash gets a
 * `step-finish` from recovery; an aborted turn's last words stay visible to later turns.)
 */
import type { AssistantContent, ModelMessage, ToolResultPart, UserContent } from 'ai'
import type { FilePart, MessageWithParts, Part, TextPart, ToolPart } from '../core/types'

const summaryPreamble = 'The conversation so far was summarised to fit the context window. Summary:\n\n'

/**
 * Converts messages (in order) to model messages.
 *
 * @example
 * const messages = toModelMessages(await repo.messages(sessionId, { fromLatestSummary: true }))
 */
export function toModelMessages(messages: MessageWithParts[], options: { finishedAttemptsOnly?: boolean } = {}): ModelMessage[] {
  const start = latestSummaryIndex(messages)
  const out: ModelMessage[] = []
  for (let i = start; i < messages.length; i++) {
    const { info, parts } = messages[i]
    if (info.summary) {
      const text = parts.filter((p) => p.type === 'text').map((p) => (p as { text: string }).text).join('\n')
      out.push({ role: 'user', content: summaryPreamble + text })
    } else if (info.role === 'user') {
      out.push({ role: 'user', content: userContent(parts) })
    } else {
      appendAssistant(out, options.finishedAttemptsOnly ? finishedAttempts(parts) : parts)
    }
  }
  return out
}

/** Where the model's history starts: the latest summary (it stands for what came before), else the first message. */
function latestSummaryIndex(messages: MessageWithParts[]): number {
  for (let i = messages.length - 1; i >= 0; i--) if (messages[i].info.summary) return i
  return 0
}

/**
 * `toModelMessages(messages, { finishedAttemptsOnly: true })` for a running turn, called before
 * each of its model calls: each step is converted once. A step's parts are final once the next
 * step has begun (its tools ran, no attempt of it comes again), so an assistant message's steps
 * below its last are kept converted and only the last step (and what follows it) is converted
 * again; the history does not grow quadratically with the steps.
 *
 * @example
 * const history = new TurnModelMessages()
 * const messages = history.convert(scope.messages) // same as toModelMessages(scope.messages, { finishedAttemptsOnly: true })
 */
export class TurnModelMessages {
  /** Per assistant message: its steps up to `step` (the parts before `end`) converted. */
  readonly #frozen = new WeakMap<MessageWithParts, { step: number; end: number; out: ModelMessage[] }>()
  /** User messages and summaries, converted once: a stored one does not change. */
  readonly #whole = new WeakMap<MessageWithParts, ModelMessage[]>()

  convert(messages: MessageWithParts[]): ModelMessage[] {
    const start = latestSummaryIndex(messages)
    const out: ModelMessage[] = []
    for (let i = start; i < messages.length; i++) {
      const message = messages[i]
      if (message.info.summary || message.info.role === 'user') out.push(...this.#wholeOf(message))
      else this.#assistant(out, message)
    }
    return out
  }

  #wholeOf(message: MessageWithParts): ModelMessage[] {
    let converted = this.#whole.get(message)
    if (!converted) this.#whole.set(message, (converted = toModelMessages([message])))
    return converted
  }

  #assistant(out: ModelMessage[], message: MessageWithParts): void {
    const { parts } = message
    const frozen = this.#frozen.get(message) ?? { step: -1, end: 0, out: [] }
    // Parts come in step order; the new ones start after the frozen steps. Otherwise (rows not
    // written by a running turn) the message is converted whole, as before.
    let last = frozen.step
    let lastStart = frozen.end
    for (let i = frozen.end; i < parts.length; i++) {
      const step = parts[i].step ?? 0
      if (step < last || step <= frozen.step) {
        this.#frozen.delete(message)
        appendAssistant(out, finishedAttempts(parts))
        return
      }
      if (step > last) {
        last = step
        lastStart = i
      }
    }
    if (lastStart > frozen.end) {
      // Steps below the last one are final: converted once, kept.
      const more: ModelMessage[] = []
      appendAssistant(more, finishedAttempts(parts.slice(frozen.end, lastStart)))
      // (appended in place: the frozen list is this converter's own, and copying it would grow with the steps)
      frozen.out.push(...more)
      frozen.step = last - 1
      frozen.end = lastStart
      this.#frozen.set(message, frozen)
    }
    out.push(...frozen.out)
    appendAssistant(out, finishedAttempts(parts.slice(frozen.end)))
  }
}

/** A part's step and attempt as one number (no string per part): an attempt is far below 2^21. */
const attemptOf = (part: Part): number => (part.step ?? 0) * 2 ** 21 + (part.attempt ?? 0)

function finishedAttempts(parts: Part[]): Part[] {
  const finished = new Set<number>()
  for (const part of parts) if (part.type === 'step-finish') finished.add(attemptOf(part))
  return finished.size === 0 ? [] : parts.filter((part) => finished.has(attemptOf(part)))
}

function appendAssistant(out: ModelMessage[], parts: Part[]): void {
  // Last attempt per step; parts without a step (legacy or foreign rows) count as step 0.
  const lastAttempt = new Map<number, number>()
  for (const part of parts) {
    const step = part.step ?? 0
    lastAttempt.set(step, Math.max(lastAttempt.get(step) ?? 0, part.attempt ?? 0))
  }
  const steps = [...lastAttempt.keys()].sort((a, b) => a - b)
  for (const step of steps) {
    const attempt = lastAttempt.get(step)
    const content: Exclude<AssistantContent, string> = []
    const results: ToolResultPart[] = []
    for (const part of parts) {
      if ((part.step ?? 0) !== step || (part.attempt ?? 0) !== attempt) continue
      // A part with provider metadata goes back even when empty (Anthropic redacted thinking).
      if ((part.type === 'text' || part.type === 'reasoning') && (part.text.length > 0 || part.providerMetadata)) {
        content.push({ type: part.type, text: part.text, ...providerOptions(part) })
      } else if (part.type === 'file' && (part.data !== undefined || part.url !== undefined)) {
        content.push({ type: 'file', data: part.data ?? new URL(part.url!), mediaType: part.mediaType ?? 'application/octet-stream', ...providerOptions(part) })
      } else if (part.type === 'tool') {
        content.push({ type: 'tool-call', toolCallId: part.callId, toolName: part.tool, input: toolInput(part), ...providerOptions(part) })
        results.push(toolResult(part))
      }
    }
    if (content.length > 0) out.push({ role: 'assistant', content })
    if (results.length > 0) out.push({ role: 'tool', content: results })
  }
}

/**
 * The provider metadata stored with a part, sent back as its `providerOptions`: what providers
 * require on the next request (Anthropic thinking signatures, Gemini thought signatures, OpenAI
 * Responses item ids), as the AI SDK's own `streamText` loop does.
 */
function providerOptions(part: TextPart | ToolPart | FilePart): { providerOptions?: ProviderOptions } {
  return part.providerMetadata ? { providerOptions: part.providerMetadata as ProviderOptions } : {}
}

type ProviderOptions = NonNullable<ToolResultPart['providerOptions']>

function toolInput(part: ToolPart): unknown {
  const input = part.state.input
  return input === undefined || input === null ? {} : input
}

function toolResult(part: ToolPart): ToolResultPart {
  return { type: 'tool-result', toolCallId: part.callId, toolName: part.tool, output: toolOutput(part.state) }
}

/** What the model is sent of a call's result. */
function toolOutput(state: ToolPart['state']): ToolResultPart['output'] {
  if (state.status === 'completed') {
    // The tool's toModelOutput, made when it completed: the model sees that, the part keeps the raw result.
    if (state.modelOutput !== undefined) return state.modelOutput as ToolResultPart['output']
    const output = state.output
    return typeof output === 'string' ? { type: 'text', value: output } : { type: 'json', value: (output ?? null) as never }
  }
  if (state.status === 'error') return { type: 'error-text', value: state.error }
  return { type: 'error-text', value: 'The tool did not run: the step was interrupted' }
}

/**
 * A stored user message's parts → what the model is sent: a string when it is text only (as
 * before), else the content array with the images and files as they were given.
 *
 * @example
 * { role: 'user', content: userContent(parts) }
 */
export function userContent(parts: Part[]): UserContent {
  if (!parts.some((p) => p.type === 'file')) {
    return parts.filter((p) => p.type === 'text').map((p) => (p as { text: string }).text).join('\n')
  }
  const content: Exclude<UserContent, string> = []
  for (const part of parts) {
    if (part.type === 'text') content.push({ type: 'text', text: part.text })
    else if (part.type === 'file') {
      const value = part.url !== undefined ? new URL(part.url) : (part.data ?? '')
      if (part.image) content.push({ type: 'image', image: value, ...(part.mediaType ? { mediaType: part.mediaType } : {}) })
      else content.push({ type: 'file', data: value, mediaType: part.mediaType ?? 'application/octet-stream', ...(part.filename ? { filename: part.filename } : {}) })
    }
  }
  return content
}
