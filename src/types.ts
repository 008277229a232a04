/**
 * The stored and published shapes of sessions, messages and parts.
 * Field names follow what agent UIs already know (opencode's message-v2 shapes).
 */
import type { SerializedError } from './errors'

export interface Tokens {
  input: number
  output: number
  reasoning: number
  cache: { read: number; write: number }
}

export interface SessionInfo {
  id: string
  title: string | null
  time: { created: number; updated: number }
}

export interface MessageInfo {
  id: string
  sessionId: string
  role: 'user' | 'assistant'
  /** The turn that created the message. */
  turnId?: string
  time: { created: number; completed?: number }
  error?: SerializedError
  finish?: string
  tokens?: Tokens
  cost?: number
  /** True on the assistant message that holds a compaction summary. */
  summary?: boolean
}

interface PartBase {
  id: string
  sessionId: string
  messageId: string
  /** Step number within the turn (1-based); absent on user parts. */
  step?: number
  /** Attempt number of that step (1-based): parts of a failed attempt stay, closed. */
  attempt?: number
}

export interface TextPart extends PartBase {
  type: 'text' | 'reasoning'
  text: string
  time: { start: number; end?: number }
}

export type ToolState =
  | {
      status: 'pending'
      input: unknown
      /** `required`: the call waits for `engine.approve` / `engine.deny` (state `awaiting-approval`). */
      approval?: 'required'
    }
  | { status: 'running'; input: unknown; time: { start: number } }
  | { status: 'completed'; input: unknown; output: unknown; time: { start: number; end: number } }
  | {
      status: 'error'
      input: unknown
      error: string
      metadata?: Record<string, unknown>
      time: { start: number; end: number }
    }

export interface ToolPart extends PartBase {
  type: 'tool'
  callId: string
  tool: string
  state: ToolState
}

export interface StepStartPart extends PartBase {
  type: 'step-start'
  time: { start: number }
}

export interface StepFinishPart extends PartBase {
  type: 'step-finish'
  reason: string
  tokens: Tokens
  cost: number
  time: { start: number }
}

export interface CompactionPart extends PartBase {
  type: 'compaction'
  auto: boolean
  time: { start: number }
}

export type Part = TextPart | ToolPart | StepStartPart | StepFinishPart | CompactionPart

export interface MessageWithParts {
  info: MessageInfo
  parts: Part[]
}

/** What a session is doing now. */
export type SessionStatus =
  | { type: 'idle' }
  | { type: 'busy'; turnId: string; state: string }
  /**
   * Waiting to retry: `attempt` is the attempt that failed, numbered as on parts (the first
   * request of a step is attempt 1), so the next request is `attempt + 1`, at time `next`.
   */
  | { type: 'retry'; turnId: string; attempt: number; message: string; next: number }

export type TurnOutcome = 'completed' | 'aborted' | 'failed'

/** A row of the persisted transition log of a turn. */
export interface TransitionRecord {
  turnId: string
  seq: number
  from: string
  event: string
  to: string
  /** The event's payload as sent to the machine (control data only). */
  payload: Record<string, unknown>
  time: number
  /** Ids of the parts written with this transition (changed since the previous one). */
  parts?: string[]
}

/** The persisted record of a turn. */
export interface TurnRecord {
  id: string
  sessionId: string
  state: string
  outcome: TurnOutcome | null
  step: number
  attempt: number
  retryAt: number | null
  error: SerializedError | null
  time: { created: number; updated: number }
  /** The engine that runs the turn, and until when its lease holds (ms). */
  owner?: string | null
  leaseUntil?: number | null
  /** Fencing token: incremented each time an engine claims the turn. */
  epoch?: number
}
