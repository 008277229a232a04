/**
 * What a store knows of one table's changes (`QueueStore.changeMark`, `CircuitStore.changeMark`):
 * a count of the writes made through it, and, where other connections may write the same
 * database, a figure of theirs that changes with each of their commits (SQLite's
 * `data_version`). A turn reads its session's queue before each model call for steers, and its
 * model's circuit before each request, and almost always finds nothing new: while the mark stays
 * the same, nothing can have changed, and the read is skipped.
 *
 * Why a count at the write suffices: the stores run a call after the transaction in progress
 * ends (SQLite's one connection, the memory store's mutex), so a reader that sees the count of a
 * write reads the table after that write's transaction committed or rolled back.
 */
export class TableChanges {
  #stored = 0

  /**
   * @param others a figure that changes whenever another connection commits to the table (or
   *   the database); absent: no other connection writes it; undefined: it cannot be told now.
   */
  constructor(private readonly others?: () => number | undefined) {}

  /** A row is being written (before its statement runs). */
  storing(): void {
    this.#stored++
  }

  /** Equal marks: nothing was written between them. Undefined: nobody can tell (read). */
  mark(): string | number | undefined {
    if (!this.others) return this.#stored
    const others = this.others()
    return others === undefined ? undefined : `${this.#stored}:${others}`
  }
}

/** The tables whose changes a store counts: what the steps read before each model call. Absent: read every time. */
export interface StoreChanges {
  queue?: TableChanges
  circuits?: TableChanges
}

/** @param others as `TableChanges`'s: shared by the tables (another connection's commit may touch any). */
export function storeChanges(others?: () => number): Required<StoreChanges> {
  return { queue: new TableChanges(others), circuits: new TableChanges(others) }
}
