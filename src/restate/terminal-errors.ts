/**
 * Which of turnchart's errors end a Restate handler and which Restate retries. Restate retries
 * every error but a `TerminalError`: a refused call (a bad argument, a call that does not wait,
 * an unknown session) would be retried forever, so it becomes a TerminalError with the HTTP
 * status the ingress answers and the error's name in its metadata; anything else (the database
 * unreachable past `storage.outageMs`, a turn another attempt holds) is retried.
 */
import type * as restate from '@restatedev/restate-sdk'
import { TurnchartError } from '../core/errors'

/** The caller's errors, by name, with the status the ingress answers them with. */
const refusals: Record<string, number> = {
  InvalidArgumentError: 400,
  InvalidOptionError: 400,
  FileTooLargeError: 413,
  SessionNotFoundError: 404,
  TurnNotFoundError: 404,
  ApprovalNotPendingError: 409,
  CallNotWaitingError: 409,
  NothingToWakeError: 409,
  QueuedPromptCancelledError: 409,
}

/** Runs an action; a refusal it throws becomes a `TerminalError`, any other error is thrown as it is. */
export type Refusals = <T>(action: () => Promise<T> | T) => Promise<T>

/**
 * `Refusals` with the SDK's `TerminalError` (the build the app's endpoint is: it knows no other's):
 * the message kept, `metadata.name` the turnchart error's name.
 *
 * @example
 * const refused = terminalErrors(restate)
 * await ctx.run('store the decision', () => refused(() => turns.decide(...)))
 */
export function terminalErrors(sdk: Pick<typeof restate, 'TerminalError'>): Refusals {
  return async (action) => {
    try {
      return await action()
    } catch (error) {
      const status = TurnchartError.isTurnchartError(error) ? refusals[error.name] : undefined
      if (status === undefined) throw error
      throw new sdk.TerminalError((error as Error).message, { errorCode: status, metadata: { name: (error as Error).name } })
    }
  }
}
