/**
 * Serialises a turn's database work so that writes land in the order they were asked for
 * (a part flush before the transition that closes it), whatever the driver does.
 */
export class WriteQueue {
  private tail: Promise<unknown> = Promise.resolve()

  /**
   * Runs `job` after every job queued before it. A failed job rejects its own promise only.
   *
   * @example
   * await queue.run(() => repo.upsertParts(parts, Date.now()))
   */
  run<T>(job: () => Promise<T>): Promise<T> {
    const result = this.tail.then(job, job)
    this.tail = result.catch(() => undefined)
    return result
  }
}
