/**
 * A promise with its resolve function outside: a one-time outcome (a turn's first storage
 * failure, its end) that whoever is made later subscribes to, instead of a callback the
 * producer would have to be given before the subscriber exists.
 */
export interface Deferred<T> {
  readonly promise: Promise<T>
  /** Settles the promise; later calls do nothing. */
  resolve(value: T): void
  /** True once `resolve` was called. */
  readonly settled: boolean
}

/**
 * @example
 * const ended = deferred<TurnEnd>()
 * void ended.promise.then((end) => console.log(end.outcome))
 * ended.resolve({ outcome: 'completed' })
 */
export function deferred<T>(): Deferred<T> {
  let resolve!: (value: T) => void
  let settled = false
  const promise = new Promise<T>((r) => (resolve = r))
  return {
    promise,
    resolve(value: T) {
      if (settled) return
      settled = true
      resolve(value)
    },
    get settled() {
      return settled
    },
  }
}
