/**
 * An in-memory mirror of the turns running in this process, fed by `engine.subscribe`: for each
 * running turn, its assistant messages, their parts with the text streamed so far, and the
 * chart's state. A page that reloads mid-turn reattaches from a snapshot of it: the snapshot and
 * the live subscription are taken in the same tick (the bus delivers synchronously), so the
 * resumed stream has no gap and no duplicate. The database lags behind by up to a flush
 * interval, which is why resuming reads this mirror rather than the rows.
 *
 * Memory: only running turns are held; a turn is dropped when its session goes idle.
 */
import type { TurnchartEvent } from '../core/bus'
import type { MessageInfo, Part } from '../core/types'
import type { TurnStateData } from './ui-messages'

/** What a running turn has produced so far. */
export interface LiveTurnSnapshot {
  turnId: string
  sessionId: string
  /** The turn's assistant messages and the user messages steered into it, in order of creation. */
  messages: MessageInfo[]
  /** Their parts, in order of creation, with the text streamed so far. */
  parts: Part[]
  state: TurnStateData
}

/** Applies one event to a turn's state data (shared by the mirror and the stream). */
export function nextTurnState(current: TurnStateData, event: TurnchartEvent): TurnStateData | undefined {
  switch (event.type) {
    case 'turn.transition':
      return event.turnId === current.turnId ? { ...current, state: event.to, retryAt: null, message: undefined } : undefined
    case 'session.status':
      if (event.status.type === 'retry' && event.status.turnId === current.turnId) {
        // The status counts retries (first retry: 1); the page shows the attempt it waits for.
        return { ...current, state: 'retry-waiting', attempt: event.status.attempt + 1, retryAt: event.status.next, message: event.status.message }
      }
      return undefined
    case 'part.updated':
      if (event.part.type === 'step-start' && event.part.attempt !== undefined && event.part.attempt !== current.attempt) {
        return { ...current, attempt: event.part.attempt }
      }
      return undefined
    default:
      return undefined
  }
}

/** The turn id an event names, if any (assistant messages only: a user message opens no stream). */
export function turnIdOf(event: TurnchartEvent): string | undefined {
  switch (event.type) {
    case 'turn.transition':
    case 'session.error':
    case 'approval.requested':
      return event.turnId
    case 'session.status':
      return event.status.type === 'idle' ? undefined : event.status.turnId
    case 'message.updated':
      return event.info.role === 'assistant' ? event.info.turnId : undefined
    default:
      return undefined
  }
}

/** Where turn events come from: `engine.subscribe`, or one turn's own event log. */
export interface TurnEventSource {
  /** Calls `listener` with every event from now on, synchronously; returns the unsubscribe. */
  subscribe(listener: (event: TurnchartEvent) => void): () => void
}

/**
 * What one turn has produced so far, kept up to date event by event: its assistant messages,
 * their parts with the text streamed so far, and the chart's state.
 */
export class TurnMirror {
  readonly #messages = new Map<string, MessageInfo>()
  readonly #parts = new Map<string, Part>()
  #state: TurnStateData

  constructor(
    readonly turnId: string,
    readonly sessionId: string,
  ) {
    this.#state = { turnId, state: 'streaming', attempt: 1, retryAt: null }
  }

  /** Takes one event of the turn's session in (events of other turns change nothing). */
  apply(event: TurnchartEvent): void {
    const state = nextTurnState(this.#state, event)
    if (state) this.#state = state
    switch (event.type) {
      case 'message.updated':
        // A user message of the turn after its first answer was steered in (the prompt comes first).
        if (event.info.turnId === this.turnId && (event.info.role === 'assistant' || this.#messages.size > 0)) this.#messages.set(event.info.id, event.info)
        break
      case 'part.updated':
        // A copy: the deltas that follow extend it, and the event's object is every subscriber's.
        if (this.#messages.has(event.part.messageId)) this.#parts.set(event.part.id, { ...event.part })
        break
      case 'part.delta': {
        const part = this.#parts.get(event.partId)
        if (part && (part.type === 'text' || part.type === 'reasoning')) part.text += event.delta
        break
      }
    }
  }

  /** A copy of what the turn has produced so far. */
  snapshot(): LiveTurnSnapshot {
    return structuredClone({
      turnId: this.turnId,
      sessionId: this.sessionId,
      messages: [...this.#messages.values()],
      parts: [...this.#parts.values()],
      state: this.#state,
    })
  }
}

export class LiveTurns {
  private readonly bySession = new Map<string, TurnMirror>()
  private readonly unsubscribe: () => void

  /**
   * Starts mirroring the running turns of `events` (those that start from now on).
   *
   * @example
   * const live = new LiveTurns(engine)
   * const snapshot = live.snapshot(sessionId) // undefined when nothing runs
   */
  constructor(events: TurnEventSource) {
    this.unsubscribe = events.subscribe((event) => this.apply(event))
  }

  /** A copy of what the session's running turn has produced so far, or undefined. */
  snapshot(sessionId: string): LiveTurnSnapshot | undefined {
    return this.bySession.get(sessionId)?.snapshot()
  }

  /** Stops mirroring. */
  close(): void {
    this.unsubscribe()
    this.bySession.clear()
  }

  private apply(event: TurnchartEvent): void {
    if (event.type === 'session.status' && event.status.type === 'idle') {
      this.drop(event.sessionId)
      return
    }
    const turnId = turnIdOf(event)
    let live = this.bySession.get(event.sessionId)
    if (turnId && live?.turnId !== turnId) {
      if (live) this.drop(event.sessionId)
      live = new TurnMirror(turnId, event.sessionId)
      this.bySession.set(event.sessionId, live)
    }
    if (!live) return
    live.apply(event)
  }

  private drop(sessionId: string): void {
    this.bySession.delete(sessionId)
  }
}
