/**
 * An async mutex: one holder at a time, the others wait in the order they asked. The memory
 * store takes it for each call and for the whole of each transaction, as SQLite's single
 * connection makes every query wait for the transaction that holds it.
 */
export class Mutex {
  private tail: Promise<void> = Promise.resolve()

  /**
   * Resolves with the release once every earlier holder released.
   *
   * @example
   * const release = await mutex.lock()
   * try { work() } finally { release() }
   */
  async lock(): Promise<() => void> {
    let release!: () => void
    const released = new Promise<void>((resolve) => (release = resolve))
    const previous = this.tail
    this.tail = previous.then(() => released)
    await previous
    return release
  }
}
