/**
 * Where a recorded turn is read from: an engine (its public calls) or any object with the same
 * three reads, such as the CLI's read-only store (`storeSource`). Nothing else of the engine
 * is needed to re-run a turn from its recorded responses.
 */
import type { Store } from '../store/store'
import type { MessageWithParts, TransitionRecord, TurnRecord } from '../core/types'

export interface RecordingSource {
  /** The turn's row: its session, outcome and stored options (model name, system prompt, tools, settings). */
  getTurn(turnId: string): Promise<TurnRecord | undefined>
  /** The turn's transition log, in order: which model calls it made and how each ended. */
  transitions(turnId: string): Promise<TransitionRecord[]>
  /** The session's messages with their parts, in order: what each call answered, and the history before the turn. */
  messages(sessionId: string): Promise<MessageWithParts[]>
  /**
   * An engine has it: the turn's model (by its stored name) says which specification version
   * a recorded model answers with; its step limit and compaction options are the re-run's.
   */
  readonly config?: {
    readonly models: Readonly<Record<string, { readonly specificationVersion: string }>>
    readonly maxSteps?: number
    readonly compaction?: { readonly auto: boolean; readonly maxPerTurn: number }
  }
  /** The chart's input of the turn (step limit, compaction switches), when the source can read it (a store can). */
  turnInput?(turnId: string): Promise<unknown>
}

/**
 * A recording source over a store (e.g. one transaction of the CLI's read-only store).
 *
 * @example
 * const source = storeSource(store)
 * const model = await recordedModel(source, turnId)
 */
export function storeSource(store: Store): RecordingSource {
  return {
    getTurn: (turnId) => store.turns.get(turnId),
    transitions: (turnId) => store.transitions.list(turnId),
    messages: (sessionId) => store.messages.list(sessionId),
    turnInput: (turnId) => store.turns.input(turnId),
  }
}
