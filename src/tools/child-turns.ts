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

/**
 * The child turn runner a tool call was given: `childTurns` of the context turnchart passes
 * every tool's `execute` (`TurnToolContext`, in `options.experimental_context`), set when the
 * engine runs child turns (`agentTool` uses it).
 *
 * @example
 * execute: async (input, options) => { const runner = childTurnsOf(options); ... }
 */
export function childTurnsOf(options: unknown): ChildTurnRunner | undefined {
  const context = (options as { experimental_context?: { childTurns?: ChildTurnRunner } } | undefined)?.experimental_context
  return context?.childTurns
}
