/**
 * The signal a model request runs under: aborted when the turn's signal aborts, or when the
 * stream stays silent too long (`touch()` on every chunk received). Used by steps and by
 * compaction's summary request, so neither can hang on a silent stream.
 */
import { StreamIdleTimeoutError } from '../core/errors'

export interface IdleTimer {
  /** Aborts on the outer signal's abort, or with `StreamIdleTimeoutError` after silence. */
  readonly signal: AbortSignal
  /** Call on every stream chunk: restarts the countdown. */
  touch(): void
  /** Stops the countdown and lets go of the outer signal. */
  stop(): void
}

/**
 * @example
 * const idle = startIdleTimer(signal, 60_000)
 * await modelStream({ ..., abortSignal: idle.signal, onChunk: idle.touch }, onEvent)
 * idle.stop()
 */
export function startIdleTimer(outer: AbortSignal, idleMs: number): IdleTimer {
  const controller = new AbortController()
  const abortFromOutside = () => controller.abort(outer.reason)
  // A signal aborted before the request starts fires no event any more: abort at once.
  if (outer.aborted) abortFromOutside()
  else outer.addEventListener('abort', abortFromOutside, { once: true })
  // One timer for the whole stream, re-armed in place on every chunk (`refresh()`): no timer
  // object cleared and created per delta.
  const timer = setTimeout(() => controller.abort(new StreamIdleTimeoutError(idleMs)), idleMs)
  return {
    signal: controller.signal,
    touch: () => {
      timer.refresh()
    },
    stop: () => {
      clearTimeout(timer)
      outer.removeEventListener('abort', abortFromOutside)
    },
  }
}
