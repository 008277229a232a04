/**
 * A promise raced against the end of its work (an abort signal, or a `StateExit`): for work that
 * may ignore its signal and never settle (a provider's `doStream`, a tool, a child turn's wait).
 * The work's own later rejection is handled, so it is never reported as unhandled once the race
 * is lost.
 */
import type { StateExit } from './state-exit'

/**
 * @example
 * const { stream } = await untilAborted(model.doStream(options), idle.signal)
 */
export function untilAborted<T>(promise: PromiseLike<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return untilLeft(promise, { left: true, reason: signal.reason, onLeave: () => () => undefined })
  return untilLeft(promise, {
    left: false,
    reason: undefined,
    onLeave(listener) {
      const onAbort = () => listener(signal.reason)
      signal.addEventListener('abort', onAbort, { once: true })
      return () => signal.removeEventListener('abort', onAbort)
    },
  })
}

/**
 * The same race against a `StateExit`: no AbortSignal is made for it (a tool call's exit, whose
 * signal is made only when the tool reads it).
 *
 * @example
 * const output = await untilLeft(tool.execute(input, options), callExit)
 */
export function untilLeft<T>(promise: PromiseLike<T>, exit: Pick<StateExit, 'left' | 'reason' | 'onLeave'>): Promise<T> {
  const work = Promise.resolve(promise)
  if (exit.left) {
    work.catch(() => undefined)
    return Promise.reject(exit.reason)
  }
  return new Promise<T>((resolve, reject) => {
    const stopListening = exit.onLeave(reject)
    work.then(
      (value) => {
        stopListening()
        resolve(value)
      },
      (error: unknown) => {
        stopListening()
        reject(error)
      },
    )
  })
}
