/**
 * Serialises a turn's database work so that writes land in the order they were asked for
 * (a part flush before the transition that closes it), whatever the driver does. It also tells
 * since when its current job runs: a write that never settles holds every later one, and the
 * stall watch (stall-watch.ts) finds it there.
 */
export class WriteQueue {
  private tail: Promise<unknown> = Promise.resolve()
  /** Jobs queued and not settled. */
  #unsettled = 0
  /** When the job running now started (epoch ms); null while none runs. */
  #runningSince: number | null = null

  /** When the job running now started (epoch ms), or null while the queue is idle. */
  get runningSince(): number | null {
    return this.#runningSince
  }

  /**
   * Runs `job` after every job queued before it. A failed job rejects its own promise only.
   *
   * @example
   * await queue.run(() => repo.upsertParts(parts, Date.now()))
   */
  run<T>(job: () => Promise<T>): Promise<T> {
    // (an idle queue runs the job at once; a busy one when the job before it settles, below)
    if (this.#unsettled++ === 0) this.#runningSince = Date.now()
    const result = this.tail.then(job, job)
    this.tail = result.then(this.#settled, this.#settled)
    return result
  }

  /** A job settled: the next one starts now, or the queue is idle. */
  readonly #settled = (): void => {
    this.#runningSince = --this.#unsettled === 0 ? null : Date.now()
  }
}
