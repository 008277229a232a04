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
