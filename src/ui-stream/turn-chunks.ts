/**
 * Translates one turn's engine events into AI SDK UI message chunks. It keeps what it has sent
 * (text length per part, each tool call's stage), so a part seen again - in a replayed snapshot,
 * or a `part.updated` that closes it - only sends what the page does not have yet.
 */
import type { FinishReason, InferUIMessageChunk } from 'ai'
import type { ChildProgress, TurnchartEvent } from '../core/bus'
import type { SerializedError } from '../core/errors'
import type { MessageInfo, Part, ToolPart } from '../core/types'
import { nextTurnState, turnIdOf, type LiveTurnSnapshot } from './live-turns'
import { denialReason, isDenied, messageMetadata, type TurnchartUIMessage, type TurnStateData } from './ui-messages'

export type TurnChunk = InferUIMessageChunk<TurnchartUIMessage>

interface ToolProgress {
  input: boolean
  approval: boolean
  output: boolean
}

const finishReasons = new Set<string>(['stop', 'length', 'content-filter', 'tool-calls', 'error', 'other'])
const finalStates = new Set(['completed', 'failed', 'aborted'])

/** Why a stream of a turn ended. */
export type TurnStreamEnd = 'completed' | 'failed' | 'aborted' | 'awaiting-approval'

export class TurnChunkWriter {
  private readonly messages = new Map<string, MessageInfo>()
  /** User messages steered into the turn (after its first assistant message): shown as `data-steered`. */
  private readonly steered = new Set<string>()
  private readonly textTypes = new Map<string, 'text' | 'reasoning'>()
  private readonly sentLength = new Map<string, number>()
  private readonly closed = new Set<string>()
  /** Step boundaries and compaction markers sent (a polled snapshot lists them again). */
  private readonly marks = new Set<string>()
  private readonly tools = new Map<string, ToolProgress>()
  private state: TurnStateData
  private error: SerializedError | undefined
  private started = false
  /** An event of this turn arrived: only then does the session going idle mean it ended. */
  private seen = false
  private ended: TurnStreamEnd | undefined
  private emit: (chunk: TurnChunk) => void

  constructor(
    readonly turnId: string,
    readonly sessionId: string,
    write: (chunk: TurnChunk) => void,
  ) {
    this.emit = write
    this.state = { turnId, state: 'streaming', attempt: 1, retryAt: null }
  }

  /** Set once the stream is over. */
  get end(): TurnStreamEnd | undefined {
    return this.ended
  }

  /**
   * Takes in what the turn produced before this stream subscribed. `send: true` sends it (a
   * page that reattaches after a reload); `false` only marks it as known (a page that already
   * shows it, e.g. the continuation after an approval).
   */
  seed(snapshot: LiveTurnSnapshot, send: boolean): void {
    const write = this.emit
    this.state = snapshot.state
    this.seen = true
    if (!send) this.emit = () => undefined
    else this.begin(snapshot.messages[0])
    for (const info of snapshot.messages) this.message(info)
    for (const part of snapshot.parts) this.part(part)
    this.emit = write
    this.begin(undefined)
    if (send && snapshot.state.state === 'awaiting-approval') this.finish('awaiting-approval')
  }

  /**
   * Brings the page up to `snapshot` (a turn read from the database, polled): sends what is
   * new since the last call - text beyond what was sent, tool stages, a changed state - and
   * ends the stream when the turn waits for an approval or has `outcome`.
   */
  sync(snapshot: LiveTurnSnapshot, outcome: TurnStreamEnd | null): void {
    if (this.ended) return
    this.seen = true
    if (!this.started) {
      this.state = snapshot.state
      this.begin(snapshot.messages[0])
    }
    for (const info of snapshot.messages) this.message(info)
    for (const part of snapshot.parts) this.part(part)
    if (JSON.stringify(snapshot.state) !== JSON.stringify(this.state)) {
      this.state = snapshot.state
      this.emit({ type: 'data-turn-state', id: 'turn-state', data: { ...snapshot.state } })
    }
    if (outcome) this.finish(outcome)
    else if (snapshot.state.state === 'awaiting-approval') this.finish('awaiting-approval')
  }

  /** Handles one engine event; returns true when the stream is over. */
  handle(event: TurnchartEvent): boolean {
    if (this.ended || event.sessionId !== this.sessionId) return this.ended !== undefined
    if (turnIdOf(event) === this.turnId) this.seen = true
    const state = nextTurnState(this.state, event)
    if (state) {
      this.state = state
      this.begin(undefined)
      this.emit({ type: 'data-turn-state', id: 'turn-state', data: { ...state } })
    }
    switch (event.type) {
      case 'message.updated':
        if (event.info.turnId === this.turnId) {
          this.begin(undefined)
          this.message(event.info)
        }
        break
      case 'part.updated':
        this.part(event.part)
        break
      case 'part.delta':
        this.delta(event.partId, event.delta)
        break
      case 'session.error':
        if (event.turnId === this.turnId) this.error = event.error
        break
      case 'approval.requested':
        if (event.turnId !== this.turnId) break
        for (const call of event.calls) {
          this.toolInput(call.callId, call.tool, call.input)
          this.approvalRequest(call.callId)
        }
        this.finish('awaiting-approval')
        break
      case 'child.progress':
        if (event.turnId === this.turnId) this.childProgress(event.callId, event.child)
        break
      case 'session.status':
        // Idle ends the stream whatever the last state seen (a turn ended by its engine's close, say).
        if (event.status.type === 'idle' && this.seen) this.finish(finalStates.has(this.state.state) ? (this.state.state as TurnStreamEnd) : 'completed')
        break
    }
    return this.ended !== undefined
  }

  /** Ends the stream as failed with `message` (a turn that could not start). */
  fail(message: string): void {
    this.error ??= { name: 'TurnStartError', message }
    this.finish('failed')
  }

  /** Ends the stream now, from what is known (the subscriber stops listening). */
  finish(end: TurnStreamEnd): void {
    if (this.ended) return
    this.begin(undefined)
    this.closeOpenParts()
    const metadata = this.metadata()
    const error = this.error ?? metadata.error
    if (end === 'aborted') {
      this.emit({ type: 'abort', reason: error?.message ?? 'the turn was aborted' })
    } else if (end === 'failed') {
      this.emit({ type: 'error', errorText: error?.message ?? 'the turn failed' })
      this.emit({ type: 'finish', finishReason: 'error', messageMetadata: metadata })
    } else {
      const finish = metadata.finish && finishReasons.has(metadata.finish) ? (metadata.finish as FinishReason) : end === 'awaiting-approval' ? 'tool-calls' : 'stop'
      this.emit({ type: 'finish', finishReason: finish, messageMetadata: metadata })
    }
    this.ended = end
  }

  /**
   * Sends `start` and the chart's state once. Only a replay names the stored message id: the
   * page then replaces its copy of that message (useChat resets on a resumed stream's start),
   * while a live stream must continue the message the page already shows under its own id.
   */
  private begin(first: MessageInfo | undefined): void {
    if (this.started) return
    this.started = true
    this.emit({ type: 'start', ...(first ? { messageId: first.id } : {}), messageMetadata: { turnId: this.turnId } })
    this.emit({ type: 'data-turn-state', id: 'turn-state', data: { ...this.state } })
  }

  private metadata() {
    const infos = [...this.messages.values()].filter((m) => !m.summary)
    const last = infos[infos.length - 1]
    return last ? messageMetadata(last) : { turnId: this.turnId }
  }

  private message(info: MessageInfo): void {
    if (info.role === 'user') {
      // The prompt comes before any answer; a user message after one was steered in.
      if (this.messages.size > 0) this.steered.add(info.id)
      return
    }
    const before = this.messages.get(info.id)
    this.messages.set(info.id, info)
    if (info.tokens && JSON.stringify(info.tokens) !== JSON.stringify(before?.tokens)) {
      this.emit({ type: 'message-metadata', messageMetadata: messageMetadata(info) })
    }
  }

  private part(part: Part): void {
    if (this.steered.has(part.messageId)) {
      if (part.type === 'text' && !this.mark(part.id)) this.emit({ type: 'data-steered', id: part.messageId, data: { text: part.text } })
      return
    }
    const message = this.messages.get(part.messageId)
    if (!message) return
    // A compaction summary's text is for the model; the page gets the marker only.
    if (message.summary && part.type !== 'compaction') return
    switch (part.type) {
      case 'text':
      case 'reasoning': {
        if (!this.textTypes.has(part.id)) {
          this.textTypes.set(part.id, part.type)
          this.sentLength.set(part.id, 0)
          this.emit({ type: `${part.type}-start`, id: part.id })
        }
        const sent = this.sentLength.get(part.id) ?? 0
        if (part.text.length > sent) this.delta(part.id, part.text.slice(sent))
        if (part.time.end !== undefined) this.closeText(part.id)
        break
      }
      case 'step-start':
        if (!this.mark(part.id)) this.emit({ type: 'start-step' })
        break
      case 'step-finish':
        if (!this.mark(part.id)) this.emit({ type: 'finish-step' })
        break
      case 'tool':
        this.tool(part)
        break
      case 'compaction':
        if (!this.mark(part.id)) this.emit({ type: 'data-compaction', id: part.id, data: { auto: part.auto } })
        break
    }
  }

  /** Marks a part as sent; true when it already was. */
  private mark(partId: string): boolean {
    if (this.marks.has(partId)) return true
    this.marks.add(partId)
    return false
  }

  private delta(partId: string, delta: string): void {
    const type = this.textTypes.get(partId)
    if (!type || this.closed.has(partId)) return
    this.sentLength.set(partId, (this.sentLength.get(partId) ?? 0) + delta.length)
    this.emit({ type: `${type}-delta`, id: partId, delta })
  }

  private closeText(partId: string): void {
    const type = this.textTypes.get(partId)
    if (!type || this.closed.has(partId)) return
    this.closed.add(partId)
    this.emit({ type: `${type}-end`, id: partId })
  }

  private closeOpenParts(): void {
    for (const id of this.textTypes.keys()) this.closeText(id)
  }

  private progress(callId: string): ToolProgress {
    let progress = this.tools.get(callId)
    if (!progress) {
      progress = { input: false, approval: false, output: false }
      this.tools.set(callId, progress)
    }
    return progress
  }

  private toolInput(callId: string, tool: string, input: unknown): void {
    const progress = this.progress(callId)
    if (progress.input) return
    progress.input = true
    this.emit({ type: 'tool-input-available', toolCallId: callId, toolName: tool, input })
  }

  private approvalRequest(callId: string): void {
    const progress = this.progress(callId)
    if (progress.approval) return
    progress.approval = true
    this.emit({ type: 'tool-approval-request', approvalId: callId, toolCallId: callId })
  }

  /**
   * Run trees: a child turn's progress, inside the parent's tool part as preliminary tool
   * results (`{ turnId, state, text? }`: the child's state, the last text it finished); the calls
   * it waits on for approval as tool parts of their own with their approval requests (the stream
   * then ends, as for the turn's own), and their ends.
   */
  private childProgress(callId: string, child: ChildProgress): void {
    if (child.approvals?.length) {
      for (const call of child.approvals) {
        this.toolInput(call.callId, call.tool, call.input)
        this.approvalRequest(call.callId)
      }
      this.finish('awaiting-approval')
      return
    }
    if (child.part) return this.tool(child.part)
    const progress = this.tools.get(callId)
    if (!progress?.input || progress.output) return
    this.emit({ type: 'tool-output-available', toolCallId: callId, output: { turnId: child.turnId, state: child.state, ...(child.text !== undefined ? { text: child.text } : {}) }, preliminary: true })
  }

  private tool(part: ToolPart): void {
    const known = this.tools.has(part.callId)
    const progress = this.progress(part.callId)
    const state = part.state
    if (!known && state.status === 'pending' && state.approval !== 'required') {
      this.emit({ type: 'tool-input-start', toolCallId: part.callId, toolName: part.tool })
      return
    }
    if (state.status === 'pending' && state.approval !== 'required') return
    this.toolInput(part.callId, part.tool, state.input)
    if (state.status === 'pending') this.approvalRequest(part.callId)
    if (progress.output || (state.status !== 'completed' && state.status !== 'error')) return
    progress.output = true
    if (state.status === 'completed') this.emit({ type: 'tool-output-available', toolCallId: part.callId, output: state.output })
    else if (isDenied(part)) {
      // The protocol's denial carries no reason; the page gets it beside (another client may have denied).
      const reason = denialReason(part)
      this.emit({ type: 'tool-output-denied', toolCallId: part.callId })
      this.emit({ type: 'data-denial', id: `denial-${part.callId}`, data: { toolCallId: part.callId, ...(reason ? { reason } : {}) } })
    }
    else this.emit({ type: 'tool-output-error', toolCallId: part.callId, errorText: state.error })
  }
}
