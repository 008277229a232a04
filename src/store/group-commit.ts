/**
 * Group commit: transactions asked for while another is running (or in the same tick) run
 * together in one transaction, each in its own savepoint, and share its commit. SQLite groups
 * every transaction this way; PostgreSQL only those that allow it (`{ shared: true }`: streamed
 * text's interval flushes, which every turn streaming on the engine asks for at the same tick).
 *
 * SQLite has one writer and turnchart one connection per file, so transactions run one after
 * another anyway; what costs is each commit (a WAL append and its lock dance, ~0.1-0.3 ms).
 * With many turns streaming at once, each flushing its parts and recording its transitions,
 * commits were most of the engine's own CPU. A transaction still sees only its own effects
 * succeed or fail: a work that throws is rolled back to its savepoint and rejects alone; the
 * others commit. A work's promise settles after the commit that made it durable (write-ahead
 * gates wait on it).
 */
import { CompiledQuery, type Kysely, type Transaction } from 'kysely'

interface Pending<DB> {
  work: (trx: Transaction<DB>) => Promise<unknown>
  resolve: (value: unknown) => void
  reject: (error: unknown) => void
}

/**
 * One savepoint at a time (each work's is released before the next begins), so one name does;
 * compiled once, not built by Kysely for every work.
 */
const savepointQueries = {
  begin: CompiledQuery.raw('savepoint turnchart_work'),
  release: CompiledQuery.raw('release savepoint turnchart_work'),
  rollback: CompiledQuery.raw('rollback to savepoint turnchart_work'),
}

/** Works per shared transaction: bounds how long one commit keeps the others waiting. */
const maxBatch = 128

/**
 * The transaction a batch runs in: Kysely's transaction for the works, and where its own
 * statements (savepoints, commit, rollback) run.
 */
export interface BatchTransaction<DB> {
  trx: Transaction<DB>
  execute(query: CompiledQuery): Promise<unknown>
  commit(): Promise<void>
  rollback(): Promise<void>
}

/** Begins a transaction, runs `run` in it while it holds the connection, and lets the connection go. */
export type BatchOpener<DB> = <T>(run: (batch: BatchTransaction<DB>) => Promise<T>) => Promise<T>

/** Kysely's controlled transaction (a caller's Kysely instance: its driver is not turnchart's). */
export function kyselyBatches<DB>(db: Kysely<DB>): BatchOpener<DB> {
  return async (run) => {
    const trx = await db.startTransaction().execute()
    return run({
      trx,
      execute: (query) => trx.executeQuery(query),
      commit: () => trx.commit().execute(),
      rollback: () => trx.rollback().execute(),
    })
  }
}

export class GroupCommit<DB> {
  readonly #open: BatchOpener<DB>
  readonly #verify: (() => void) | undefined
  #pending: Pending<DB>[] = []
  #draining = false

  /**
   * @param open begins each shared transaction (`kyselyBatches(db)`, or on turnchart's own
   *   connection `directBatches`: sqlite/direct-statements.ts).
   * @param options `joins`: every transaction (the default) or only the shared ones
   *   (`GroupCommitter.joins`); `verify`: run before each shared transaction, throws when
   *   writing is no longer safe.
   */
  constructor(open: BatchOpener<DB>, options: { joins?: 'every' | 'shared'; verify?: () => void } = {}) {
    this.#open = open
    this.#verify = options.verify
    this.joins = options.joins ?? 'every'
  }

  readonly joins: 'every' | 'shared'

  /**
   * Runs `work` in a transaction (shared with the works queued with it) and resolves with its
   * result once that transaction committed; rejects with the work's error (its writes rolled
   * back) or with the commit's.
   *
   * @example
   * await group.run((trx) => trx.insertInto('t').values(row).execute())
   */
  run<T>(work: (trx: Transaction<DB>) => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#pending.push({ work, resolve: resolve as (value: unknown) => void, reject })
      if (!this.#draining) {
        this.#draining = true
        // After this loop turn's I/O callbacks: what the other turns' chunks, timers and tool
        // results ask for in the same turn joins this batch (SQLite's work is synchronous, so a
        // microtask would commit each one before the next callback runs).
        setImmediate(() => void this.#drain())
      }
    })
  }

  async #drain(): Promise<void> {
    try {
      while (this.#pending.length > 0) {
        const batch = this.#pending.splice(0, maxBatch)
        const retry = await this.#runBatch(batch)
        // Works a broken transaction never reached go first in the next one.
        if (retry.length > 0) this.#pending.unshift(...retry)
        // Let sockets and timers run between batches: one batch's work is all synchronous.
        if (this.#pending.length > 0) await new Promise((resolve) => setImmediate(resolve))
      }
    } finally {
      this.#draining = false
    }
  }

  /** Runs one batch; returns the works it did not get to (the transaction broke before them). */
  async #runBatch(batch: Pending<DB>[]): Promise<Pending<DB>[]> {
    try {
      this.#verify?.()
      // (everything after the begin settles the works itself: what rejects here is the begin)
      return await this.#open((transaction) => (batch.length === 1 ? this.#runAlone(transaction, batch[0]) : this.#runShared(transaction, batch)))
    } catch (error) {
      for (const item of batch) item.reject(error)
      return []
    }
  }

  /** Each work in its own savepoint of the one transaction, then its commit. */
  async #runShared(transaction: BatchTransaction<DB>, batch: Pending<DB>[]): Promise<Pending<DB>[]> {
    const done: Array<{ item: Pending<DB>; value: unknown }> = []
    const failed: Array<{ item: Pending<DB>; error: unknown }> = []
    let broken: unknown
    let index = 0
    for (; index < batch.length && broken === undefined; index++) {
      const item = batch[index]
      try {
        await transaction.execute(savepointQueries.begin)
      } catch (error) {
        broken = error
        break // this work was not attempted: it is retried in the next transaction
      }
      try {
        done.push({ item, value: await item.work(transaction.trx) })
        await transaction.execute(savepointQueries.release)
      } catch (error) {
        if (done.at(-1)?.item === item) done.pop()
        failed.push({ item, error })
        try {
          await transaction.execute(savepointQueries.rollback)
          await transaction.execute(savepointQueries.release)
        } catch (cause) {
          // SQLite ended the whole transaction itself (disk full, I/O error): nothing in it stays.
          broken = cause
        }
      }
    }
    const notRun = batch.slice(index)
    try {
      if (broken !== undefined) throw broken
      await transaction.commit()
      for (const { item, value } of done) item.resolve(value)
    } catch (error) {
      await transaction.rollback().catch(() => undefined)
      for (const { item } of done) item.reject(error)
    }
    for (const { item, error } of failed) item.reject(error)
    return notRun
  }

  /** A batch of one: no savepoint, as a plain transaction. */
  async #runAlone(transaction: BatchTransaction<DB>, item: Pending<DB>): Promise<Pending<DB>[]> {
    let value: unknown
    try {
      value = await item.work(transaction.trx)
      await transaction.commit()
    } catch (error) {
      // A failing ROLLBACK must not hide the error that caused it (SQLite rolls back by itself
      // on SQLITE_FULL or an I/O error, and the ROLLBACK then finds no transaction).
      await transaction.rollback().catch(() => undefined)
      item.reject(error)
      return []
    }
    item.resolve(value)
    return []
  }
}
