/**
 * One turn's events as AI SDK UI message chunks: a map of each event (`part.updated` says what
 * changed, so nothing of what was sent needs remembering). What it folds is the protocol's
 * framing only: `start` sent once, the text parts open (closed at the end), the chart's state
 * (`data-turn-state`), the last answer's info (the final metadata), the error, how it ended.
 */
import type { FinishReason, InferUIMessageChunk } from 'ai'
import type { ChildProgress, PartChange, ToolStage, TurnchartEvent } from '../core/bus'
import type { SerializedError } from '../core/errors'
import type { MessageInfo, Part, ToolPart } from '../core/types'
import { isFinalState, stepStreamState, waitOf } from '../../machines/turn.machine'
import type { WaitingStateName } from '../../machines/turn.types'
import { toolStage } from '../turn/turn-stream'
import { denialReason, isDenied, messageMetadata, type TurnchartUIMessage, type TurnStateData } from './ui-messages'

export type TurnChunk = InferUIMessageChunk<TurnchartUIMessage>

const finishReasons = new Set<string>(['stop', 'length', 'content-filter', 'tool-calls', 'error', 'other'])

/** Why a stream of a turn ended: its outcome, or the waiting state it stopped at (the turn goes on once that is settled, maybe on another engine). */
export type TurnStreamEnd = 'completed' | 'failed' | 'aborted' | WaitingStateName

/** The end of a stream of a turn in `state`, when that state is a wait the page settles (the chart's `meta.wait` with a `uiFinish`): a stream stops there. */
export function waitingEnd(state: string): TurnStreamEnd | undefined {
  return waitOf(state)?.uiFinish ? (state as WaitingStateName) : undefined
}

/** The turn id an event names, if any (assistant messages only: a user message opens no stream). */
/** The state after an attempt started: its number, and the model it asks (fallback models); undefined when neither changed. */
function stepStarted(current: TurnStateData, part: Extract<Part, { type: 'step-start' }>): TurnStateData | undefined {
  const attempt = part.attempt ?? current.attempt
  if (attempt === current.attempt && part.model === current.model) return undefined
  return { ...current, attempt, ...(part.model !== undefined ? { model: part.model } : {}) }
}

function turnIdOf(event: TurnchartEvent): string | undefined {
  switch (event.type) {
    case 'turn.transition':
    case 'session.error':
    case 'approval.requested':
    case 'part.delta':
      return event.turnId
    case 'session.status':
      return event.status.type === 'idle' ? undefined : event.status.turnId
    case 'message.updated':
      return event.info.turnId
    default:
      return undefined
  }
}

export class TurnChunks {
  /** The text and reasoning parts started and not ended yet, by id. */
  readonly #open = new Map<string, 'text' | 'reasoning'>()
  #state: TurnStateData
  #answer: MessageInfo | undefined
  #error: SerializedError | undefined
  #started = false
  /** An event of this turn arrived: only then does the session going idle mean it ended. */
  #seen = false
  #ended: TurnStreamEnd | undefined
  /** While a replay is handled: an old approval request does not end the stream (the state at its end says). */
  #replaying = false

  constructor(
    readonly turnId: string,
    readonly sessionId: string,
    private readonly write: (chunk: TurnChunk) => void,
  ) {
    this.#state = { turnId, state: stepStreamState, attempt: 1, retryAt: null }
  }

  /** Set once the stream is over. */
  get end(): TurnStreamEnd | undefined {
    return this.#ended
  }

  /**
   * Handles a replay of the turn so far (`subscribe(…, { replay: true })`): `start` names its
   * first answer (the page replaces its copy of that message), and a turn that waits for an
   * approval ends the stream there. `state`: the chart's state, when the events do not say it
   * (a turn read from its rows).
   */
  replay(events: TurnchartEvent[], state?: TurnStateData): boolean {
    this.#seen = true
    if (state) this.#state = state
    const first = events.find((e) => e.type === 'message.updated' && e.origin === 'answer')
    this.begin(first?.type === 'message.updated' ? first.info : undefined)
    this.#replaying = true
    for (const event of events) this.handle(event)
    this.#replaying = false
    const waiting = waitingEnd(this.#state.state)
    if (!this.#ended && waiting) this.finish(waiting)
    return this.#ended !== undefined
  }

  /** Handles one event; returns true when the stream is over. */
  handle(event: TurnchartEvent): boolean {
    if (this.#ended || event.sessionId !== this.sessionId) return this.#ended !== undefined
    if (turnIdOf(event) === this.turnId) {
      this.#seen = true
      this.begin(undefined)
    }
    this.#nextState(event)
    switch (event.type) {
      case 'turn.transition':
        // Structured output's object, before the turn's finish (the transition's row carries it).
        if (event.turnId === this.turnId && 'output' in event) this.#emit({ type: 'data-output', id: 'output', data: event.output })
        break
      case 'message.updated':
        if (event.info.turnId === this.turnId && (event.origin === 'answer' || event.origin === 'summary')) this.#message(event.info, event.change)
        break
      case 'part.updated':
        this.#part(event.part, event.origin, event.change, event.from)
        break
      case 'part.delta': {
        const type = this.#open.get(event.partId)
        if (type) this.#emit({ type: `${type}-delta`, id: event.partId, delta: event.delta })
        break
      }
      case 'session.error':
        if (event.turnId === this.turnId) this.#error = event.error
        break
      case 'approval.requested':
      case 'calls.waiting': {
        // The calls' parts said it already (stage `approval`, in doubt, deferred); the stream ends at the wait.
        const waiting = waitingEnd(this.#state.state)
        if (event.turnId === this.turnId && !this.#replaying && waiting) this.finish(waiting)
        break
      }
      case 'child.progress':
        if (event.turnId === this.turnId) this.#childProgress(event.callId, event.child)
        break
      case 'session.status':
        // Idle ends the stream whatever the last state seen (a turn ended by its engine's close, say).
        if (event.status.type === 'idle' && this.#seen) this.finish(isFinalState(this.#state.state) ? (this.#state.state as TurnStreamEnd) : 'completed')
        break
    }
    return this.#ended !== undefined
  }

  /** The chart's state as read from the turn's row (a stream polled from the database). */
  state(state: TurnStateData): void {
    if (JSON.stringify(state) === JSON.stringify(this.#state)) return
    this.#state = state
    this.#emit({ type: 'data-turn-state', id: 'turn-state', data: { ...state } })
  }

  /** Ends the stream as failed with `message` (a turn that could not start). */
  fail(message: string): void {
    this.#error ??= { name: 'TurnStartError', message }
    this.finish('failed')
  }

  /** Ends the stream now, from what is known (the subscriber stops listening). */
  finish(end: TurnStreamEnd): void {
    if (this.#ended) return
    this.begin(undefined)
    for (const [id, type] of this.#open) this.write({ type: `${type}-end`, id })
    this.#open.clear()
    const metadata = this.#answer ? messageMetadata(this.#answer) : { turnId: this.turnId }
    const error = this.#error ?? metadata.error
    if (end === 'aborted') {
      this.write({ type: 'abort', reason: error?.message ?? 'the turn was aborted' })
    } else if (end === 'failed') {
      this.write({ type: 'error', errorText: error?.message ?? 'the turn failed' })
      this.write({ type: 'finish', finishReason: 'error', messageMetadata: metadata })
    } else {
      const finish = metadata.finish && finishReasons.has(metadata.finish) ? (metadata.finish as FinishReason) : (waitOf(end)?.uiFinish ?? 'stop')
      this.write({ type: 'finish', finishReason: finish, messageMetadata: metadata })
    }
    this.#ended = end
  }

  /**
   * Sends `start` and the chart's state once. Only a replay names the stored message id: the
   * page then replaces its copy of that message (useChat resets on a resumed stream's start),
   * while a live stream must continue the message the page already shows under its own id.
   */
  begin(first: MessageInfo | undefined): void {
    if (this.#started) return
    this.#started = true
    this.write({ type: 'start', ...(first ? { messageId: first.id } : {}), messageMetadata: { turnId: this.turnId } })
    this.write({ type: 'data-turn-state', id: 'turn-state', data: { ...this.#state } })
  }

  #emit(chunk: TurnChunk): void {
    this.begin(undefined)
    this.write(chunk)
  }

  /** The chart's state after `event`, sent when it changed. */
  #nextState(event: TurnchartEvent): void {
    const current = this.#state
    let next: TurnStateData | undefined
    if (event.type === 'turn.transition' && event.turnId === this.turnId) next = { ...current, state: event.to, retryAt: null, message: undefined }
    else if (event.type === 'session.status' && event.status.type === 'retry' && event.status.turnId === this.turnId) {
      // The status counts retries (first retry: 1); the page shows the attempt it waits for. (The
      // state is the retry wait the transition before it entered: a step's or a summary's.)
      next = { ...current, attempt: event.status.attempt + 1, retryAt: event.status.next, message: event.status.message }
    } else if (event.type === 'storage.waiting' && event.turnId === this.turnId) {
      next = { ...current, storage: { operation: event.operation, since: event.since } }
    } else if (event.type === 'storage.resumed' && event.turnId === this.turnId && current.storage) {
      const { storage: _, ...rest } = current
      next = rest
    } else if (event.type === 'part.updated' && event.origin === 'answer' && event.part.type === 'step-start') {
      next = stepStarted(current, event.part)
    }
    if (!next) return
    this.#state = next
    this.#emit({ type: 'data-turn-state', id: 'turn-state', data: { ...next } })
  }

  #message(info: MessageInfo, change: 'open' | 'usage' | 'update'): void {
    if (!info.summary) this.#answer = info
    if (info.tokens && (change === 'usage' || change === 'open')) this.#emit({ type: 'message-metadata', messageMetadata: messageMetadata(info) })
  }

  #part(part: Part, origin: string, change: PartChange, from: ToolStage | undefined): void {
    if (origin === 'steer') {
      if (part.type === 'text' && change === 'open') this.#emit({ type: 'data-steered', id: part.messageId, data: { text: part.text } })
      return
    }
    // A compaction summary's text is for the model; the page gets the marker only.
    if (origin === 'summary') {
      if (part.type === 'compaction' && change === 'open') this.#emit({ type: 'data-compaction', id: part.id, data: { auto: part.auto } })
      return
    }
    if (origin !== 'answer' || change === 'update') return
    switch (part.type) {
      case 'text':
      case 'reasoning':
        if (change === 'open' && !this.#open.has(part.id)) {
          this.#open.set(part.id, part.type)
          this.#emit({ type: `${part.type}-start`, id: part.id })
          if (part.text) this.#emit({ type: `${part.type}-delta`, id: part.id, delta: part.text })
        }
        if (part.time.end !== undefined && this.#open.delete(part.id)) this.#emit({ type: `${part.type}-end`, id: part.id })
        break
      case 'step-start':
        if (change === 'open') this.#emit({ type: 'start-step' })
        break
      case 'step-finish':
        if (change === 'open') this.#emit({ type: 'finish-step' })
        break
      case 'tool':
        this.#tool(part, change === 'open' ? undefined : from)
        break
    }
  }

  #input(part: ToolPart): void {
    this.#emit({ type: 'tool-input-available', toolCallId: part.callId, toolName: part.tool, input: part.state.input })
  }

  /**
   * A tool call at its new stage; `from`: the stage before (undefined: the part is new here, at
   * the stage it is at now). Its input is sent once: with the first stage past `pending`.
   */
  #tool(part: ToolPart, from: ToolStage | undefined): void {
    const stage = toolStage(part)
    if (stage === 'pending') {
      if (from === undefined) this.#emit({ type: 'tool-input-start', toolCallId: part.callId, toolName: part.tool })
      return
    }
    if (from === undefined || from === 'pending') this.#input(part)
    if (stage === 'approval') this.#emit({ type: 'tool-approval-request', approvalId: part.callId, toolCallId: part.callId })
    if (stage === 'completed' || stage === 'error') this.#output(part)
  }

  #output(part: ToolPart): void {
    const state = part.state
    if (state.status === 'completed') this.#emit({ type: 'tool-output-available', toolCallId: part.callId, output: state.output })
    else if (isDenied(part)) {
      // The protocol's denial carries no reason; the page gets it beside (another client may have denied).
      const reason = denialReason(part)
      this.#emit({ type: 'tool-output-denied', toolCallId: part.callId })
      this.#emit({ type: 'data-denial', id: `denial-${part.callId}`, data: { toolCallId: part.callId, ...(reason ? { reason } : {}) } })
    } else if (state.status === 'error') this.#emit({ type: 'tool-output-error', toolCallId: part.callId, errorText: state.error })
  }

  /**
   * Run trees: a child turn's progress, inside the parent's tool part as preliminary tool
   * results (`{ turnId, state, text? }`: the child's state, the last text it finished); the calls
   * it waits on for approval as tool parts of their own with their approval requests (the stream
   * then ends, as for the turn's own), and their ends.
   */
  #childProgress(callId: string, child: ChildProgress): void {
    if (child.approvals?.length) {
      for (const call of child.approvals) {
        this.#emit({ type: 'tool-input-available', toolCallId: call.callId, toolName: call.tool, input: call.input })
        this.#emit({ type: 'tool-approval-request', approvalId: call.callId, toolCallId: call.callId })
      }
      const waiting = child.approvals.map((call) => waitingEnd(call.state)).find((end) => end !== undefined)
      if (!this.#replaying && waiting) this.finish(waiting)
      return
    }
    // The end of a call the child waited on: a stream that follows the approval has not sent its input.
    if (child.part) return this.#tool(child.part, toolStage(child.part) === 'running' ? 'approval' : 'pending')
    this.#emit({ type: 'tool-output-available', toolCallId: callId, output: { turnId: child.turnId, state: child.state, ...(child.text !== undefined ? { text: child.text } : {}) }, preliminary: true })
  }
}
