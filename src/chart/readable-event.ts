/** A logged row as a person reads it: its event's name, and the stall it records. */
import type { TurnStall } from '../../machines/turn.types'

/**
 * A logged event's name as a person reads it. The log stores XState's own names, which replay
 * needs as they are: a retry timer is `xstate.after.retryDelay.turn.running.step.retry-waiting`.
 * The CLI's text output (the demo, `replay`) shows these names instead; its --json output and
 * the log keep the stored ones.
 *
 * @example
 * readableEvent('xstate.after.retryDelay.turn.running.step.retry-waiting') // 'retry timer'
 * readableEvent('step.finished') // 'step.finished'
 */
export function readableEvent(event: string): string {
  const after = /^xstate\.after\.([^.]+)\./.exec(event)
  if (after) return after[1] === 'retryDelay' ? 'retry timer' : `${after[1]} timer`
  // Logs written by 0.1 hold the tool actor's own events (read as tools.finished / turn.fail).
  const actor = /^xstate\.(done|error)\.actor\.(.+)$/.exec(event)
  if (actor) return `${actor[2]} ${actor[1] === 'done' ? 'done' : 'failed'}`
  return event
}

/**
 * The stall a row records: on the `turn.crashed` row that its engine wrote when it found the turn
 * stalled there and let it go (recovery resumed it after it); undefined for any other row, a
 * crash's included.
 *
 * @example
 * stallOf(row)?.waitingOn // 'a write to the database'
 */
export function stallOf(row: { event: string; payload?: Record<string, unknown> }): TurnStall | undefined {
  const stalled = row.event === 'turn.crashed' ? row.payload?.stalled : undefined
  if (typeof stalled !== 'object' || stalled === null) return undefined
  const { state, waitingOn, since, boundMs } = stalled as Record<string, unknown>
  return typeof state === 'string' && typeof waitingOn === 'string' && typeof since === 'number' && typeof boundMs === 'number' ? { state, waitingOn, since, boundMs } : undefined
}

/**
 * A stall as a person reads it, for the row that logged it (at `at`, epoch ms).
 *
 * @example
 * stallText(stall, row.time) // "stalled in 'tool-running': a write to the database did not move for 3.20 s (its bound 1.00 s); stopped and left for recovery"
 */
export function stallText(stall: TurnStall, at: number): string {
  const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`
  return `stalled in '${stall.state}': ${stall.waitingOn} did not move for ${seconds(Math.max(0, at - stall.since))} (its bound ${seconds(stall.boundMs)}); stopped and left for recovery`
}
