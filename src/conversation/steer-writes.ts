/**
 * The steers this engine is storing, by session: a turn reads the session's steers after they
 * are stored, so a steer sent here before a model call joins that call. Made before the turns
 * and the prompt queue, which both take it (the queue tells it each steer it stores; a turn
 * waits on it before each model call).
 */
export class SteerWrites {
  readonly #pending = new Map<string, Set<Promise<void>>>()

  /** Resolves once the steers being stored for `sessionId` are stored (or failed). */
  stored(sessionId: string): Promise<void> {
    const pending = this.#pending.get(sessionId)
    return pending ? Promise.allSettled([...pending]).then(() => undefined) : Promise.resolve()
  }

  /** A steer of `sessionId` is being stored (`saved` settles once it is). */
  storing(sessionId: string, saved: Promise<void>): void {
    const pending = this.#pending.get(sessionId) ?? new Set<Promise<void>>()
    this.#pending.set(sessionId, pending)
    pending.add(saved)
    const done = () => {
      pending.delete(saved)
      if (pending.size === 0 && this.#pending.get(sessionId) === pending) this.#pending.delete(sessionId)
    }
    saved.then(done, done)
  }
}
