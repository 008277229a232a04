/**
 * What a store knows of its queue's changes (`QueueStore.changeMark`): a count of the prompts
 * and steers stored through it, and, where other connections may write the same database, a
 * figure of theirs that changes with each of their commits (SQLite's `data_version`). A turn's
 * step gate reads its session's queue before each model call for steers, and almost always
 * finds none: while the mark stays the same, nothing can have been queued, and the read is
 * skipped.
 *
 * Why a count at insert suffices: the stores run a call after the transaction in progress ends
 * (SQLite's one connection, the memory store's mutex), so a reader that sees the count of an
 * insert reads the queue after that insert's transaction committed or rolled back.
 */
export class QueueChanges {
  #stored = 0

  /** @param others a figure that changes whenever another connection commits to the database; absent: no other connection writes it. */
  constructor(private readonly others?: () => number) {}

  /** A prompt or a steer is being stored (before its statement runs). */
  storing(): void {
    this.#stored++
  }

  /** Equal marks: nothing was queued between them. */
  mark(): string | number {
    return this.others ? `${this.#stored}:${this.others()}` : this.#stored
  }
}
