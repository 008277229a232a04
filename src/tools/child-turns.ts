/**
 * The port a tool starts a child turn through (run trees): the engine puts a runner in the
 * context each tool call gets, bound to the calling turn; `agentTool` takes it from there. The
 * runner starts the call's child turn (or finds the one a crash left, by call id), waits for its
 * end and says how it ended; an abort of the call's signal aborts the child.
 */
import type { SerializedError } from '../core/errors'
import type { StopCondition, TurnOutcome } from '../core/types'

/** What a tool asks of a child turn: for which call, with what prompt and options. */
export interface ChildTurnCall {
  /** The parent's tool call: at most one child per call, found again after a crash. */
  callId: string
  /** The child's user input. */
  prompt: string
  /** The child's model, tools (registered names) and system prompt; absent: the engine's. */
  options: { model?: string; tools?: string[]; system?: string; stopWhen?: StopCondition | StopCondition[] }
  /** The call's signal: aborted when the parent turn is aborted or the call times out. */
  signal: AbortSignal
}

/** How a child turn ended. */
export interface ChildTurnResult {
  turnId: string
  sessionId: string
  outcome: TurnOutcome
  /** The text of its last step (its answer when it completed). */
  text: string
  error?: SerializedError
}

export interface ChildTurnRunner {
  run(call: ChildTurnCall): Promise<ChildTurnResult>
}

const runnerKey = Symbol.for('turnchart.childTurns')

/**
 * `context` with `runner` attached (not enumerable: the context stays what the app sees).
 *
 * @example
 * const context = withChildTurns({ sessionId, turnId }, runner)
 */
export function withChildTurns<T extends object>(context: T, runner: ChildTurnRunner | undefined): T {
  if (runner) Object.defineProperty(context, runnerKey, { value: runner, enumerable: false })
  return context
}

/** The runner in the options a tool's `execute` got, if the engine put one there. */
export function childTurnsOf(options: unknown): ChildTurnRunner | undefined {
  const context = (options as { experimental_context?: Record<symbol, unknown> } | undefined)?.experimental_context
  return (context?.[runnerKey] as ChildTurnRunner | undefined) ?? undefined
}
