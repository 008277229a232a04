/**
 * Aborts a controller when a stream stays silent too long: `touch()` on every part received.
 * Used by steps and by compaction's summary request, so neither can hang on a silent stream.
 */
import { StreamIdleTimeoutError } from '../errors'

export interface IdleTimer {
  /** Call on every stream part: restarts the countdown. */
  touch(): void
  stop(): void
}

/**
 * @example
 * const idle = startIdleTimer(controller, 60_000)
 * for await (const part of stream) { idle.touch(); ... }
 * idle.stop()
 */
export function startIdleTimer(controller: AbortController, idleMs: number): IdleTimer {
  let timer: NodeJS.Timeout | undefined
  const touch = () => {
    if (timer) clearTimeout(timer)
    timer = setTimeout(() => controller.abort(new StreamIdleTimeoutError(idleMs)), idleMs)
  }
  touch()
  return {
    touch,
    stop: () => {
      if (timer) clearTimeout(timer)
    },
  }
}
