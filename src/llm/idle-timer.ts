/**
 * The signal a model request runs under: aborted when the chart leaves the state that made the
 * request, or when the stream stays silent too long (`touch()` on every chunk received). Used by
 * steps and by compaction's summary request, so neither can hang on a silent stream.
 */
import { StreamIdleTimeoutError } from '../core/errors'
import type { StateExit } from '../core/state-exit'

export interface IdleTimer {
  /** Aborts when the state is left, or with `StreamIdleTimeoutError` after silence. */
  readonly signal: AbortSignal
  /** Call on every stream chunk: restarts the countdown. */
  touch(): void
  /** Stops the countdown and stops listening to the state's exit. */
  stop(): void
}

/**
 * @example
 * const idle = startIdleTimer(exit, 60_000)
 * await modelStream({ ..., abortSignal: idle.signal, onChunk: idle.touch }, onEvent)
 * idle.stop()
 */
export function startIdleTimer(exit: Pick<StateExit, 'onLeave'>, idleMs: number): IdleTimer {
  const controller = new AbortController()
  // (a state left before the request starts aborts it at once)
  const stopListening = exit.onLeave((reason) => controller.abort(reason))
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
      stopListening()
    },
  }
}
