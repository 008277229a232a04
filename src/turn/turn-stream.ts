/**
 * One turn's part stream: the one place where what a turn does becomes events, once. The part
 * writer's changes (a part opened or changed, a delta, a message's info) and the turn's other
 * events (transitions, statuses, errors, approval requests, a child's progress) come in here;
 * each becomes one `TurnchartEvent` that says what changed (`part.updated`'s `change` and
 * `from`, `message.updated`'s `change`, the `origin` of both), so that every reader is a
 * transform with no memory of its own of what it was told:
 *
 * - the engine's bus (`engine.subscribe`) gets each event as it is made;
 * - `subscribe(listener, { replay })`: the same events, for one turn;
 * - `fullStream()` / `textStream()`: typed parts (`streamParts` below);
 * - the UI message stream (src/ui-stream, above this layer) maps the same events to chunks.
 *
 * Memory: the stream holds the turn's messages and parts by reference (the objects the part
 * writer writes: a delta's text is held once, in its part) and a bounded tail of the other
 * events (`tailSize`, default 64). A reader that starts late replays from them: each message
 * and part as it is now (`open`, its text so far in the part), then the tail, then the live
 * events; nothing else of the past is kept.
 */
import type { Bus, PartChange, PartOrigin, ToolStage, TurnchartEvent } from '../core/bus'
import { MessageAbortedError, type SerializedError } from '../core/errors'
import { jsonCopy } from '../core/json-copy'
import { emptyTokens, type MessageInfo, type MessageWithParts, type Part, type TextPart, type Tokens, type ToolPart } from '../core/types'
import { callWait } from '../core/call-wait'

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
  /** The call waits for `engine.resolveCall`: its outcome is unknown (`in-doubt`) or its result comes later (`deferred`). */
  | { type: 'tool-waiting'; toolCallId: string; toolName: string; input: unknown; status: 'in-doubt' | 'deferred'; reason?: string; deadline?: number }
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

/** How many of the turn's events other than its parts and messages a late reader replays (the last ones). */
export const defaultTailSize = 64

/** A reader of the turn's events. */
export type TurnListener = (event: TurnchartEvent) => void

/** What reads a turn's events: `replay` first gives the turn so far (its parts as they are now, then the tail). */
export interface TurnEventSubscription {
  subscribe(listener: TurnListener, options?: { replay?: boolean }): () => void
}

interface HeldMessage {
  info: MessageInfo
  origin: PartOrigin
  tokens: string
  parts: HeldPart[]
}

interface HeldPart {
  part: Part
  /** What the stream last said of it: `open`/`closed` for text, the stage of a tool, `told` for the rest. */
  stage: string
}

export class TurnPartStream implements TurnEventSubscription {
  readonly #bus: Pick<Bus, 'publish'>
  readonly #turnId: string
  readonly #sessionId: string
  readonly #tailSize: number
  /** The turn's messages and their parts, in order of creation, by reference. */
  readonly #messages = new Map<string, HeldMessage>()
  readonly #parts = new Map<string, HeldPart>()
  /** The last `tailSize` events that are not a part's or a message's. */
  readonly #tail: TurnchartEvent[] = []
  readonly #listeners = new Set<TurnListener>()
  /** Called once when the stream ends (the turn's end, or `close`). */
  readonly #onEnd = new Set<() => void>()
  /** Why the turn left this engine without an end of its own (detached, could not start). */
  #closedWith: SerializedError | undefined
  #ended = false
  /** Events told so far: the turn moved when this changed (the stall watch reads it). */
  #emitted = 0
  /** A child turn's ids, stamped on each event it publishes (run trees); undefined for a root turn. */
  readonly #child: { turnId: string; parentTurnId: string } | undefined

  constructor(bus: Pick<Bus, 'publish'>, turn: { turnId: string; sessionId: string; parentTurnId?: string }, options: { tailSize?: number } = {}) {
    this.#bus = bus
    this.#turnId = turn.turnId
    this.#sessionId = turn.sessionId
    this.#tailSize = options.tailSize ?? defaultTailSize
    this.#child = turn.parentTurnId ? { turnId: turn.turnId, parentTurnId: turn.parentTurnId } : undefined
  }

  get turnId(): string {
    return this.#turnId
  }

  get sessionId(): string {
    return this.#sessionId
  }

  /** How many events the turn has told so far (it moves while this grows). */
  get emitted(): number {
    return this.#emitted
  }

  /** True once the turn ended (or left this engine): readers that start now get the replay, then their end. */
  get ended(): boolean {
    return this.#ended
  }

  /** A turn event that is not a part's or a message's (a transition, a status, an error, an approval request, a child's progress). */
  publish(event: TurnchartEvent): void {
    if (event.type === 'part.updated' || event.type === 'part.delta' || event.type === 'message.updated') throw new Error(`${event.type} goes through part(), delta() or message()`)
    if (this.#ended) return void this.#bus.publish(this.#stamp(event))
    const stamped = this.#stamp(event)
    this.#tail.push(stamped)
    if (this.#tail.length > this.#tailSize) this.#tail.shift()
    this.#emit(stamped)
    if ((event.type === 'session.status' && event.status.type === 'idle') || event.type === 'turn.lost') this.#end()
  }

  /** A message of the turn was created or changed (`origin`: for a user message, the prompt or a steer). */
  message(info: MessageInfo, origin: PartOrigin = info.summary ? 'summary' : info.role === 'user' ? 'prompt' : 'answer'): void {
    const tokens = info.tokens ? JSON.stringify(info.tokens) : ''
    let held = this.#messages.get(info.id)
    let change: 'open' | 'usage' | 'update' = 'update'
    if (!held) {
      held = { info, origin, tokens, parts: [] }
      this.#messages.set(info.id, held)
      change = 'open'
    } else {
      held.info = info
      if (tokens !== held.tokens) change = 'usage'
      held.tokens = tokens
    }
    this.#emit(this.#stamp({ type: 'message.updated', sessionId: info.sessionId, info: jsonCopy(info), origin: held.origin, change }))
  }

  /** A part was opened or changed (the writer's object: the stream keeps it, and publishes a copy). */
  part(part: Part): void {
    let held = this.#parts.get(part.id)
    let change: PartChange
    let from: ToolStage | undefined
    const stage = stageOf(part)
    if (!held) {
      held = { part, stage }
      this.#parts.set(part.id, held)
      this.#messages.get(part.messageId)?.parts.push(held)
      change = 'open'
    } else {
      held.part = part
      change = held.stage === stage ? 'update' : part.type === 'tool' ? 'stage' : 'close'
      if (change === 'stage') from = held.stage as ToolStage
      held.stage = stage
    }
    const origin = this.#messages.get(part.messageId)?.origin ?? 'answer'
    this.#emit(this.#stamp({ type: 'part.updated', sessionId: part.sessionId, part: copyPart(part), origin, change, ...(from ? { from } : {}) }))
  }

  /** Streamed text appended to `part` (already in `part.text`: the stream keeps no copy). */
  delta(part: TextPart | Extract<Part, { type: 'reasoning' }>, delta: string): void {
    this.#emit(this.#stamp({ type: 'part.delta', sessionId: part.sessionId, turnId: this.#turnId, messageId: part.messageId, partId: part.id, partType: part.type, field: 'text', delta }))
  }

  /** The messages of a turn restored from the database (recovery): a reader of the resumed turn gets them too. Told to nobody. */
  seed(messages: MessageWithParts[]): void {
    let prompted = false
    for (const { info, parts } of messages) {
      const origin: PartOrigin = info.summary ? 'summary' : info.role === 'assistant' ? 'answer' : prompted ? 'steer' : 'prompt'
      if (info.role === 'user') prompted = true
      const held: HeldMessage = { info, origin, tokens: info.tokens ? JSON.stringify(info.tokens) : '', parts: [] }
      this.#messages.set(info.id, held)
      for (const part of parts) {
        const heldPart = { part, stage: stageOf(part) }
        this.#parts.set(part.id, heldPart)
        held.parts.push(heldPart)
      }
    }
  }

  /** Ends every reader (the turn left this engine without an end: it was detached, lost or never started). */
  close(error?: SerializedError): void {
    if (this.#ended) return
    this.#closedWith = error
    this.#end()
  }

  /** The turn so far as events: each message and part as it is now (`open`), then the tail. */
  replay(): TurnchartEvent[] {
    const events: TurnchartEvent[] = []
    for (const held of this.#messages.values()) {
      events.push(this.#stamp({ type: 'message.updated', sessionId: held.info.sessionId, info: jsonCopy(held.info), origin: held.origin, change: 'open' }))
      for (const { part } of held.parts) events.push(this.#stamp({ type: 'part.updated', sessionId: part.sessionId, part: copyPart(part), origin: held.origin, change: 'open' }))
    }
    // A child's progress is shown in its call's part, replayed above as it is now.
    for (const event of this.#tail) if (event.type !== 'child.progress' || event.child.approvals?.length) events.push(event)
    return events
  }

  /** Calls `listener` with each event of the turn from now on (with `replay`, the turn so far first, in this call). */
  subscribe(listener: TurnListener, options: { replay?: boolean } = {}): () => void {
    if (options.replay) for (const event of this.replay()) listener(event)
    if (this.#ended) return () => undefined
    this.#listeners.add(listener)
    return () => this.#listeners.delete(listener)
  }

  /** Calls `onEnd` once when the stream ends (at once when it has). */
  onEnd(onEnd: () => void): () => void {
    if (this.#ended) {
      onEnd()
      return () => undefined
    }
    this.#onEnd.add(onEnd)
    return () => this.#onEnd.delete(onEnd)
  }

  /** A new reader of every part: the turn so far (each part's text in one delta), then the live ones, until the turn's end. */
  fullStream(): AsyncIterableStream<TurnStreamPart> {
    let stop = () => {}
    const stream = new ReadableStream<TurnStreamPart>({
      start: (controller) => {
        const toParts = streamParts(this.#turnId, this.#sessionId, (part) => controller.enqueue(part))
        const unsubscribe = this.subscribe((event) => toParts.take(event), { replay: true })
        const unEnd = this.onEnd(() => {
          unsubscribe()
          toParts.end(this.#closedWith)
          controller.close()
        })
        stop = () => {
          unsubscribe()
          unEnd()
        }
      },
      cancel: () => stop(),
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

  #stamp(event: TurnchartEvent): TurnchartEvent {
    return this.#child ? { ...event, ...this.#child } : event
  }

  #emit(event: TurnchartEvent): void {
    this.#emitted++
    this.#bus.publish(event)
    for (const listener of this.#listeners) listener(event)
  }

  #end(): void {
    if (this.#ended) return
    this.#ended = true
    this.#listeners.clear()
    for (const onEnd of this.#onEnd) onEnd()
    this.#onEnd.clear()
  }
}

/** Where a part is, as the stream tells its changes. */
export function stageOf(part: Part): string {
  if (part.type === 'text' || part.type === 'reasoning') return part.time.end === undefined ? 'open' : 'closed'
  if (part.type === 'tool') return toolStage(part)
  return 'told'
}

export function toolStage(part: ToolPart): ToolStage {
  const { state } = part
  return callWait(state)?.kind === 'approval' ? 'approval' : state.status
}

/** A part as an event carries it: a copy (the writer goes on changing its own), a text's string shared (strings do not change). */
function copyPart(part: Part): Part {
  if (part.type !== 'text' && part.type !== 'reasoning') return jsonCopy(part)
  const { metadata, time, ...rest } = part as TextPart & { metadata?: unknown }
  return { ...rest, time: { ...time }, ...(metadata !== undefined ? { metadata: jsonCopy(metadata) } : {}) } as Part
}

/**
 * The typed parts of one turn's events (`fullStream`): a map of each event, folding only what
 * the last part needs (the usage so far, the last finish reason, whether an error came).
 */
export function streamParts(turnId: string, sessionId: string, emit: (part: TurnStreamPart) => void): { take(event: TurnchartEvent): void; end(closedWith?: SerializedError): void } {
  const usage = { tokens: emptyTokens(), cost: 0 }
  let finishReason = 'unknown'
  let failed = false
  emit({ type: 'start', turnId, sessionId })
  const toolPart = (part: ToolPart) => {
    const call = { toolCallId: part.callId, toolName: part.tool, input: part.state.input }
    if (part.state.status === 'running') emit({ type: 'tool-call', ...call })
    else if (part.state.status === 'completed') emit({ type: 'tool-result', ...call, output: part.state.output })
    else if (part.state.status === 'error') emit({ type: 'tool-error', ...call, error: part.state.error })
  }
  const take = (event: TurnchartEvent) => {
    switch (event.type) {
      case 'part.updated': {
        const { part, change } = event
        if (event.origin === 'steer') {
          if (change === 'open' && part.type === 'text') emit({ type: 'steered', messageId: part.messageId, text: part.text })
          return
        }
        if (event.origin !== 'answer' || change === 'update') return
        switch (part.type) {
          case 'step-start':
            return emit({ type: 'start-step', step: part.step ?? 0, attempt: part.attempt ?? 0 })
          case 'step-finish':
            finishReason = part.reason
            addTokens(usage, part.tokens, part.cost)
            return emit({ type: 'finish-step', step: part.step ?? 0, attempt: part.attempt ?? 0, finishReason: part.reason, usage: part.tokens, cost: part.cost })
          case 'text':
          case 'reasoning':
            if (change === 'open') {
              emit({ type: `${part.type}-start`, id: part.id })
              // A part that opens with text (replayed, restored) is told as one delta.
              if (part.text) emit({ type: `${part.type}-delta`, id: part.id, text: part.text })
            }
            if (part.time.end !== undefined) emit({ type: `${part.type}-end`, id: part.id })
            return
          case 'tool':
            if (change === 'open') emit({ type: 'tool-input-start', id: part.callId, toolName: part.tool })
            return toolPart(part)
        }
        return
      }
      case 'part.delta':
        return emit({ type: event.partType === 'reasoning' ? 'reasoning-delta' : 'text-delta', id: event.partId, text: event.delta })
      case 'approval.requested':
        for (const call of event.calls) emit({ type: 'tool-approval-request', toolCallId: call.callId, toolName: call.tool, input: call.input })
        return
      case 'calls.waiting':
        for (const { callId, tool, ...call } of event.calls) emit({ type: 'tool-waiting', toolCallId: callId, toolName: tool, ...call })
        return
      case 'session.status':
        if (event.status.type === 'retry') {
          const { attempt, next, message } = event.status
          emit({ type: 'retry', attempt, retryAt: next, delayMs: Math.max(0, next - Date.now()), message })
        } else if (event.status.type === 'idle' && !failed) {
          emit({ type: 'finish', finishReason, totalUsage: usage })
        }
        return
      case 'session.error':
        failed = true
        return emit(MessageAbortedError.isInstance(event.error) || event.error.name === 'MessageAbortedError' ? { type: 'abort', error: event.error } : { type: 'error', error: event.error })
      case 'turn.lost':
        failed = true
        return emit({ type: 'error', error: event.error })
      default:
        return
    }
  }
  return {
    take,
    end(closedWith) {
      if (closedWith && !failed) emit({ type: 'error', error: closedWith })
    },
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
