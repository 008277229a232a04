/** The first call a turn waits on (in doubt or deferred), from its events so far and to come. */
import type { Turn, WaitingCall } from '../../src'

/**
 * Resolves with the first call `turn` announces as waiting (`calls.waiting`), replayed if it
 * came already.
 *
 * @example
 * const call = await waitingCall(turn) // { callId, tool, status: 'in-doubt', reason: 'restart', ... }
 */
export function waitingCall(turn: Pick<Turn, 'subscribe'>): Promise<WaitingCall> {
  return new Promise((resolve) => {
    let stop: (() => void) | undefined
    let found: WaitingCall | undefined
    stop = turn.subscribe(
      (event) => {
        if (found || event.type !== 'calls.waiting' || !event.calls[0]) return
        found = event.calls[0]
        stop?.()
        resolve(found)
      },
      { replay: true },
    )
    if (found) stop()
  })
}
