/**
 * One turn's events as a stream of typed parts, shaped like the AI SDK's `TextStreamPart`
 * where the concept is the same (`text-delta`, `reasoning-delta`, `tool-call`, `tool-result`,
 * `start-step`, `finish-step`, `finish`, `error`, `abort`, …), plus turnchart's own (`retry`,
 * `tool-approval-request`). It sits between the turn and the engine's bus: every event the
 * turn publishes passes through it (`publish`), is forwarded to the bus, and becomes parts.
 *
 * Any number of readers (`fullStream()`, `textStream()`), each a `ReadableStream` that is also
 * an `AsyncIterable`. A reader that starts late first gets the parts so far: the log keeps the
 * structural parts and each part's text merged into one delta (memory grows with the turn's
 * content, not with its number of deltas), then the live ones, delta by delta.
 */
import type { Bus, TurnchartEvent } from '../core/bus'
import { MessageAbortedError, type SerializedError } from '../core/errors'
import { emptyTokens, type MessageWithParts, type Part, type Tokens, type ToolPart } from '../core/types'
import { TurnMirror, type LiveTurnSnapshot, type TurnEventSource } from '../ui-stream/live-turns'
import type { TurnStreamEnd } from '../ui-stream/turn-chunks'

/** A `ReadableStream` that is also an `AsyncIterable` (as the AI SDK's streams are). */
export type AsyncIterableStream<T> = ReadableStream<T> & AsyncIterable<T>

export type TurnStreamPart =
  | { type: 'start'; turnId: string; sessionId: string }
  | { type: 'start-step'; step: number; attempt: number }
  | { type: 'text-start' | 'reasoning-start'; id: string }
  | { type: 'text-delta' | 'reasoning-delta'; id: string; text: string }
  | { type: 'text-end' | 'reasoning-end'; id: string }
  | { type: 'tool-input-start'; id: string; toolName: string }
  | { type: 'tool-call'; toolCallId: string; toolName: string; input: unknown }
  /** The call waits for `approve`/`deny` (the turn is in `awaiting-approval`). */
  | { type: 'tool-approval-request'; toolCallId: string; toolName: string; input: unknown }
  | { type: 'tool-result'; toolCallId: string; toolName: string; input: unknown; output: unknown }
  | { type: 'tool-error'; toolCallId: string; toolName: string; input: unknown; error: string }
  | { type: 'finish-step'; step: number; attempt: number; finishReason: string; usage: Tokens; cost: number }
  /** A message steered into the turn (`engine.steer`) joined its history: the model's next call sees it. */
  | { type: 'steered'; messageId: string; text: string }
  /** Attempt `attempt` failed; the next one is made at `retryAt` (epoch ms). */
  | { type: 'retry'; attempt: number; retryAt: number; delayMs: number; message: string }
  /** The turn completed. `totalUsage`: its steps' tokens and cost, compactions included. */
  | { type: 'finish'; finishReason: string; totalUsage: { tokens: Tokens; cost: number } }
  | { type: 'error'; error: SerializedError }
  | { type: 'abort'; error: SerializedError }

type Reader = ReadableStreamDefaultController<TurnStreamPart>

/** A part's state as the stream last reported it: the parts are told once per change. */
interface Seen {
  status: string
  ended: boolean
}

export class TurnEventLog implements TurnEventSource {
  readonly #bus: Pick<Bus, 'publish'>
  readonly #log: TurnStreamPart[] = []
  readonly #readers = new Set<Reader>()
  readonly #seen = new Map<string, Seen>()
  readonly #usage = { tokens: emptyTokens(), cost: 0 }
  /** The prompt's and the summaries' messages: their parts are not the model's answer. */
  readonly #notAnswers = new Set<string>()
  /** The user messages after the prompt: steered into the turn. */
  readonly #steered = new Set<string>()
  /** What the turn produced so far as parts and messages, for a UI message stream that starts late. */
  readonly #mirror: TurnMirror
  /** Readers of the turn's events as published (`subscribe`). */
  readonly #listeners = new Set<(event: TurnchartEvent) => void>()
  #prompted = false
  #lastFinishReason = 'unknown'
  #closed = false

  /** A child turn's ids, stamped on each event it publishes (run trees); undefined for a root turn. */
  readonly #child: { turnId: string; parentTurnId: string } | undefined

  constructor(bus: Pick<Bus, 'publish'>, turn: { turnId: string; sessionId: string; parentTurnId?: string }) {
    this.#bus = bus
    this.#child = turn.parentTurnId ? { turnId: turn.turnId, parentTurnId: turn.parentTurnId } : undefined
    this.#mirror = new TurnMirror(turn.turnId, turn.sessionId)
    this.#add({ type: 'start', turnId: turn.turnId, sessionId: turn.sessionId })
  }

  /** Publishes a turn's event on the engine's bus and adds what it means to the stream. */
  publish(event: TurnchartEvent): void {
    if (this.#child) event = { ...event, ...this.#child }
    this.#bus.publish(event)
    this.#take(event)
    this.#mirror.apply(event)
    for (const listener of this.#listeners) listener(event)
  }

  /** Calls `listener` with each event the turn publishes from now on (the engine's bus carries every turn's). */
  subscribe(listener: (event: TurnchartEvent) => void): () => void {
    this.#listeners.add(listener)
    return () => this.#listeners.delete(listener)
  }

  /**
   * What the turn produced so far, as a UI message stream that starts now needs it (taken in the
   * same tick as `subscribe`, nothing is missed or sent twice); `ended`: how the turn ended, once it has.
   */
  uiSnapshot(): { snapshot: LiveTurnSnapshot; ended?: TurnStreamEnd } {
    const snapshot = this.#mirror.snapshot()
    if (!this.#closed) return { snapshot }
    const state = snapshot.state.state
    const ended: TurnStreamEnd =
      state === 'completed' || state === 'failed' || state === 'aborted' ? state : this.#log.some((p) => p.type === 'error') ? 'failed' : 'completed'
    return { snapshot, ended }
  }

  /**
   * The parts of a turn restored from the database (recovery): what its stored messages say,
   * so that a reader of a resumed turn gets them too.
   */
  seed(messages: MessageWithParts[]): void {
    for (const message of messages) {
      const info: TurnchartEvent = { type: 'message.updated', sessionId: message.info.sessionId, info: message.info }
      this.#take(info)
      this.#mirror.apply(info)
      for (const part of message.parts) {
        const updated: TurnchartEvent = { type: 'part.updated', sessionId: part.sessionId, part }
        this.#take(updated)
        this.#mirror.apply(updated)
      }
    }
  }

  /** Ends every reader (the turn left this engine without an end: it was detached or lost). */
  close(error?: SerializedError): void {
    if (error) this.#add({ type: 'error', error })
    this.#end()
  }

  /** A new reader of every part: those so far, then the live ones, until the turn's end. */
  fullStream(): AsyncIterableStream<TurnStreamPart> {
    let reader: Reader
    const stream = new ReadableStream<TurnStreamPart>({
      start: (controller) => {
        reader = controller
        for (const part of this.#log) controller.enqueue({ ...part })
        if (this.#closed) controller.close()
        else this.#readers.add(controller)
      },
      cancel: () => {
        this.#readers.delete(reader)
      },
    })
    return stream as AsyncIterableStream<TurnStreamPart>
  }

  /** A new reader of the answer's text deltas (reasoning left out). */
  textStream(): AsyncIterableStream<string> {
    const text = this.fullStream().pipeThrough(
      new TransformStream<TurnStreamPart, string>({
        transform(part, controller) {
          if (part.type === 'text-delta') controller.enqueue(part.text)
        },
      }),
    )
    return text as AsyncIterableStream<string>
  }

  #take(event: TurnchartEvent): void {
    if (this.#closed) return
    switch (event.type) {
      case 'message.updated':
        if (event.info.role === 'user' && this.#prompted && !this.#notAnswers.has(event.info.id)) this.#steered.add(event.info.id)
        if (event.info.role === 'user') this.#prompted = true
        if (event.info.role !== 'assistant' || event.info.summary) this.#notAnswers.add(event.info.id)
        return
      case 'part.updated':
        if (this.#steered.has(event.part.messageId)) {
          if (event.part.type === 'text' && !this.#seen.has(event.part.id)) this.#add({ type: 'steered', messageId: event.part.messageId, text: event.part.text })
          this.#seen.set(event.part.id, { status: '', ended: true })
        } else if (!this.#notAnswers.has(event.part.messageId)) this.#part(event.part)
        return
      case 'part.delta':
        return this.#delta(event.partType === 'reasoning' ? 'reasoning-delta' : 'text-delta', event.partId, event.delta)
      case 'approval.requested':
        for (const call of event.calls) this.#add({ type: 'tool-approval-request', toolCallId: call.callId, toolName: call.tool, input: call.input })
        return
      case 'session.status':
        if (event.status.type === 'retry') {
          const { attempt, next, message } = event.status
          this.#add({ type: 'retry', attempt, retryAt: next, delayMs: Math.max(0, next - Date.now()), message })
        } else if (event.status.type === 'idle') {
          // The turn's last event: after its error, if it had one.
          if (!this.#log.some((p) => p.type === 'error' || p.type === 'abort')) {
            this.#add({ type: 'finish', finishReason: this.#lastFinishReason, totalUsage: this.#usage })
          }
          this.#end()
        }
        return
      case 'session.error':
        this.#add(MessageAbortedError.isInstance(event.error) || event.error.name === 'MessageAbortedError' ? { type: 'abort', error: event.error } : { type: 'error', error: event.error })
        return
      case 'turn.lost':
        this.close(event.error)
        return
      default:
        return
    }
  }

  #part(part: Part): void {
    const seen = this.#seen.get(part.id)
    switch (part.type) {
      case 'step-start':
        if (!seen) this.#add({ type: 'start-step', step: part.step ?? 0, attempt: part.attempt ?? 0 })
        break
      case 'step-finish':
        if (seen) break
        this.#lastFinishReason = part.reason
        addTokens(this.#usage, part.tokens, part.cost)
        this.#add({ type: 'finish-step', step: part.step ?? 0, attempt: part.attempt ?? 0, finishReason: part.reason, usage: part.tokens, cost: part.cost })
        break
      case 'text':
      case 'reasoning': {
        const kind = part.type
        if (!seen) {
          this.#add({ type: `${kind}-start`, id: part.id })
          // A part that arrives with text (a restored one) is told as one delta.
          if (part.text) this.#delta(`${kind}-delta`, part.id, part.text)
        }
        if (part.time.end !== undefined && !seen?.ended) this.#add({ type: `${kind}-end`, id: part.id })
        this.#seen.set(part.id, { status: '', ended: part.time.end !== undefined })
        return
      }
      case 'tool':
        this.#tool(part, seen)
        return
    }
    this.#seen.set(part.id, { status: '', ended: true })
  }

  #tool(part: ToolPart, seen: Seen | undefined): void {
    const { status } = part.state
    if (seen?.status === status) return
    const call = { toolCallId: part.callId, toolName: part.tool, input: part.state.input }
    if (!seen) this.#add({ type: 'tool-input-start', id: part.callId, toolName: part.tool })
    if (status === 'running') this.#add({ type: 'tool-call', ...call })
    else if (status === 'completed' && part.state.status === 'completed') this.#add({ type: 'tool-result', ...call, output: part.state.output })
    else if (status === 'error' && part.state.status === 'error') this.#add({ type: 'tool-error', ...call, error: part.state.error })
    this.#seen.set(part.id, { status, ended: status === 'completed' || status === 'error' })
  }

  /** A delta: to the live readers as it is, in the log merged into the part's last delta. */
  #delta(type: 'text-delta' | 'reasoning-delta', id: string, text: string): void {
    const last = this.#log.at(-1)
    if (last && last.type === type && last.id === id) last.text += text
    else this.#log.push({ type, id, text })
    for (const reader of this.#readers) reader.enqueue({ type, id, text })
  }

  #add(part: TurnStreamPart): void {
    this.#log.push(part)
    for (const reader of this.#readers) reader.enqueue({ ...part })
  }

  #end(): void {
    if (this.#closed) return
    this.#closed = true
    for (const reader of this.#readers) reader.close()
    this.#readers.clear()
  }
}

function addTokens(into: { tokens: Tokens; cost: number }, tokens: Tokens, cost: number): void {
  into.tokens.input += tokens.input
  into.tokens.output += tokens.output
  into.tokens.reasoning += tokens.reasoning
  into.tokens.cache.read += tokens.cache.read
  into.tokens.cache.write += tokens.cache.write
  into.cost += cost
}
