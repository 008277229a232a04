/**
 * A wait that a ring ends early: the shape of every loop that polls the database for what
 * another engine did, when PostgreSQL can also push it. `wait(ms)` resolves at the next ring or
 * after `ms` (the poll), and a ring that came while nobody waited ends the next wait at once,
 * so a notification that arrives between a read and the wait that follows it is not lost.
 */
export class Doorbell {
  #rung = false
  #wake: (() => void) | undefined

  /** Ends the current wait, or the next one if none runs. */
  ring(): void {
    this.#rung = true
    this.#wake?.()
  }

  /**
   * Resolves at a ring, after `ms`, or when `signal` aborts, whichever comes first. One wait
   * at a time.
   *
   * @example
   * const bell = new Doorbell()
   * const off = feed.subscribe(() => bell.ring())
   * while (!(await done())) await bell.wait(250)
   */
  wait(ms: number, signal?: AbortSignal): Promise<void> {
    if (this.#rung || signal?.aborted) {
      this.#rung = false
      return Promise.resolve()
    }
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer)
        signal?.removeEventListener('abort', done)
        this.#wake = undefined
        this.#rung = false
        resolve()
      }
      const timer = setTimeout(done, ms)
      this.#wake = done
      signal?.addEventListener('abort', done, { once: true })
    })
  }
}
