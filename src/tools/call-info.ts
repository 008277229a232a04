/**
 * What a tool call knows of itself: the session and turn it runs for, its call id, its
 * idempotency key and which execution of the stored call this is. Handed to `execute` as the AI
 * SDK's `experimental_context` (and as fields of its options) and read back with `callInfo`.
 */
import { sha256Hex } from '../core/input-digest'
import type { ChildTurnRunner } from './child-turns'

/** What a call asks the engine to schedule on its session: a prompt and when (as `engine.schedule` takes it). */
export interface CallSchedule {
  input: string
  at?: number
  every?: number
  cron?: string
  timezone?: string
}

/** The engine's schedules as a tool call reaches them: bound to the call's session, the call's key the schedule's id. */
export type ScheduleFromCall = (request: CallSchedule) => Promise<{ id: string; next: number | null }>

/**
 * What a tool's `execute` gets besides the AI SDK's options (as `options.experimental_context`):
 * the session and turn it runs for, and the runner of child turns when the engine runs them.
 */
export interface TurnToolContext {
  sessionId: string
  turnId: string
  /** Run trees: starts a child turn of this call (what `agentTool` runs on); absent when the engine runs none. */
  childTurns?: ChildTurnRunner
  /** Stores a schedule on this session (what `scheduleTool` runs on), the call's key its id; absent when the store keeps none. */
  schedule?: ScheduleFromCall
}

/** What the engine lends a turn's tool calls: the runner of child turns, and its schedules (each bound to the call when it runs). */
export interface CallPorts {
  childTurns?: ChildTurnRunner
  schedule?: (request: Parameters<ScheduleFromCall>[0] & { sessionId: string; id: string }) => ReturnType<ScheduleFromCall>
}

/** One execution of one stored tool call, as `callInfo(options)` reads it. */
export interface CallInfo extends TurnToolContext {
  /** The model's id of the call (`options.toolCallId`). */
  callId: string
  /**
   * The same for every execution of this stored call (a re-run after a crash, on another
   * engine, after an approval or a `resolveCall` retry), different for every other call (a fork
   * or a re-run of the turn makes new calls, with new keys). Hand it to an API that dedupes by
   * key, so that running the call twice has its effect once.
   */
  idempotencyKey: string
  /** Which execution of the stored call this is: 1 for the first, 2 after one re-run, … */
  attempt: number
}

/**
 * The idempotency key of the stored call `partId` of turn `turnId`: a digest of both ids (the
 * part's id is stored with the call, so every engine computes the same key; a fork copies the
 * part under a new id, so its calls get new keys).
 */
export function idempotencyKeyOf(turnId: string, partId: string): string {
  return `idk_${sha256Hex(`turnchart-call\0${turnId}\0${partId}`).slice(0, 40)}`
}

/**
 * The session, turn, call, idempotency key and execution of a tool call, read from the options
 * `execute` receives. Outside a turnchart turn the fields are empty strings and `attempt` 1.
 *
 * @example
 * execute: async (input, options) => {
 *   const { idempotencyKey, attempt } = callInfo(options)
 *   return payments.charge(input, { idempotencyKey }) // the API charges once per key
 * }
 */
export function callInfo(options: unknown): CallInfo {
  const given = options as { toolCallId?: unknown; experimental_context?: Partial<CallInfo> } | undefined
  const context = given?.experimental_context
  const callId = String(context?.callId ?? given?.toolCallId ?? '')
  return {
    sessionId: String(context?.sessionId ?? ''),
    turnId: String(context?.turnId ?? ''),
    callId,
    idempotencyKey: String(context?.idempotencyKey ?? ''),
    attempt: typeof context?.attempt === 'number' ? context.attempt : 1,
    ...(context?.childTurns ? { childTurns: context.childTurns } : {}),
    ...(context?.schedule ? { schedule: context.schedule } : {}),
  }
}

/**
 * The session and turn a tool call runs for: the older, narrower form of `callInfo` (kept as
 * its alias; `callInfo` returns these and the call's id, key and execution).
 *
 * @example
 * execute: async (input, options) => { const { sessionId, turnId } = turnOfTool(options); ... }
 */
export function turnOfTool(options: unknown): TurnToolContext {
  const { sessionId, turnId } = callInfo(options)
  return { sessionId, turnId }
}
