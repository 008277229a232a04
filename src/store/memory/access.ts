/**
 * How an aggregate of the memory store reaches the tables: each call runs as one statement
 * (synchronously, so nothing interleaves with it; all of its writes or none when it throws),
 * either on its own under the store's mutex or inside the transaction that holds it.
 */
import type { Mutex } from './mutex'
import { Journal, type Tables } from './tables'

export interface Access {
  /** Runs `fn` on the tables as one statement: its writes stay, or none does when it throws. */
  run<T>(fn: (tables: Tables) => T): Promise<T>
}

/** A call on the store itself: waits for the mutex (for a running transaction to end), then runs alone. */
export function autocommit(tables: Tables, mutex: Mutex): Access {
  return {
    async run(fn) {
      const release = await mutex.lock()
      const journal = new Journal()
      tables.journal = journal
      try {
        return fn(tables)
      } catch (error) {
        tables.undo(journal)
        throw error
      } finally {
        tables.journal = undefined
        release()
      }
    },
  }
}

/**
 * A call inside a transaction (which holds the mutex): runs at once. A statement that throws is
 * undone on its own and the transaction goes on, as on SQLite (PostgreSQL would refuse every
 * later statement of the transaction); a throw out of the transaction undoes all of it.
 */
export function inTransaction(tables: Tables, journal: Journal, isOpen: () => boolean): Access {
  return {
    async run(fn) {
      if (!isOpen()) throw new Error('this transaction has ended: its store cannot be used any more (use the store that started it)')
      const mark = journal.entries.length
      try {
        return fn(tables)
      } catch (error) {
        tables.undo(journal, mark)
        throw error
      }
    },
  }
}
