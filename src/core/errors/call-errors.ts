/** Errors of one tool call's effect: an outcome nobody knows, a settling call on a call that is not waiting. */
import { safeMessage } from './serialize'
import { isNamed, TurnchartError } from './turnchart-error'

/**
 * Thrown by a running tool (or the layer that runs it, e.g. an MCP client) whose effect may or
 * may not have happened: the connection was lost mid-call, the answer never came. The call is
 * not shown to the model as an error: turnchart asks the tool's `reconcile` hook, and without
 * one (or when it cannot tell) the call's part becomes `status: 'in-doubt'` and the turn waits
 * for `engine.resolveCall`.
 *
 * @example
 * execute: async (input, options) => {
 *   const { callId, idempotencyKey } = callInfo(options)
 *   try { return await api.charge(input, { idempotencyKey }) }
 *   catch (error) { if (isConnectionLost(error)) throw new CallOutcomeUnknownError({ callId, toolName: 'charge', cause: error }); throw error }
 * }
 */
export class CallOutcomeUnknownError extends TurnchartError {
  readonly name = 'CallOutcomeUnknownError'
  readonly callId: string
  readonly toolName: string
  constructor(input: { callId: string; toolName: string; cause?: unknown; message?: string }) {
    const why = input.message ?? (input.cause !== undefined ? safeMessage(input.cause) : 'the outcome of the call is unknown')
    super(`tool '${input.toolName}' call ${input.callId}: outcome unknown: ${why}`, input.cause !== undefined ? { cause: input.cause } : undefined)
    this.callId = input.callId
    this.toolName = input.toolName
  }
  static isInstance = isNamed<CallOutcomeUnknownError>('CallOutcomeUnknownError')
}

/** `resolveCall` on a call that is neither in doubt nor deferred (or on a turn not waiting for it). */
export class CallNotWaitingError extends TurnchartError {
  readonly name = 'CallNotWaitingError'
  readonly turnId: string
  readonly callId: string
  constructor(turnId: string, callId: string, why: string) {
    super(`tool call ${callId} of turn ${turnId} is not in doubt or deferred: ${why}`)
    this.turnId = turnId
    this.callId = callId
  }
  static isInstance = isNamed<CallNotWaitingError>('CallNotWaitingError')
}

/** `engine.wake(turnId)`: none of the turn's calls waits for a time (a sleep, a `defer({ onDeadline })`), so there is nothing to bring forward. */
export class NothingToWakeError extends TurnchartError {
  readonly name = 'NothingToWakeError'
  readonly turnId: string
  constructor(turnId: string, why: string) {
    super(`turn ${turnId} has no call that waits for a time: ${why}`)
    this.turnId = turnId
  }
  static isInstance = isNamed<NothingToWakeError>('NothingToWakeError')
}
