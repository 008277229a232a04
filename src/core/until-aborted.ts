/**
 * A promise raced against an abort signal: for work that may ignore its signal and never settle
 * (a provider's `doStream`, a tool, a child turn's wait). The work's own later rejection is
 * handled, so it is never reported as unhandled once the race is lost.
 *
 * @example
 * const { stream } = await untilAborted(model.doStream(options), idle.signal)
 */
export function untilAborted<T>(promise: PromiseLike<T>, signal: AbortSignal): Promise<T> {
  const work = Promise.resolve(promise)
  if (signal.aborted) {
    work.catch(() => undefined)
    return Promise.reject(signal.reason)
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason)
    signal.addEventListener('abort', onAbort, { once: true })
    work.then(
      (value) => {
        signal.removeEventListener('abort', onAbort)
        resolve(value)
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort)
        reject(error)
      },
    )
  })
}
