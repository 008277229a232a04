/**
 * The store on Kysely: one code path for SQLite and PostgreSQL. Each aggregate is a small class
 * over an executor (the database, or one transaction of it); `transaction` binds a new set of
 * them to a transaction.
 */
import type { Kysely } from 'kysely'
import type { GroupCommitter } from '../backend'
import type { StoreChanges } from '../table-changes'
import type { TurnchartDatabase } from '../schema'
import type { Store, TransactionOptions } from '../store'
import { KyselyControls } from './controls'
import { KyselyMessages } from './messages'
import { KyselyQueue } from './queue'
import { KyselySchedules } from './schedules'
import { KyselyCircuits } from './circuits'
import type { Executor } from './rows'
import { KyselySessions } from './sessions'
import { KyselySpending } from './spending'
import { KyselySlots } from './slots'
import { KyselyTransitions } from './transitions'
import { KyselyTurns } from './turns'

export class KyselyStore implements Store {
  readonly sessions: KyselySessions
  readonly messages: KyselyMessages
  readonly turns: KyselyTurns
  readonly transitions: KyselyTransitions
  readonly queue: KyselyQueue
  readonly controls: KyselyControls
  readonly spending: KyselySpending
  readonly slots: KyselySlots
  readonly schedules: KyselySchedules
  readonly circuits: KyselyCircuits

  /**
   * @param verify run before each transaction; throws when writing is no longer safe (a SQLite file deleted under us).
   * @param group the backend's group commit: transactions asked for together share one commit (SQLite: every one; PostgreSQL: the shared ones).
   * @param changes the backend's count of the queue's and circuits' changes (SQLite; PostgreSQL: the circuits' only): their `changeMark`.
   */
  constructor(
    private readonly db: Executor,
    private readonly verify?: () => void,
    private readonly group?: GroupCommitter,
    private readonly changes?: StoreChanges,
  ) {
    this.sessions = new KyselySessions(db)
    this.messages = new KyselyMessages(db)
    this.turns = new KyselyTurns(db)
    this.transitions = new KyselyTransitions(db)
    this.queue = new KyselyQueue(db, changes?.queue)
    this.controls = new KyselyControls(db)
    this.spending = new KyselySpending(db)
    this.slots = new KyselySlots(db)
    this.schedules = new KyselySchedules(db)
    this.circuits = new KyselyCircuits(db, changes?.circuits)
  }

  /** The stores of the group commit's transactions: SQLite's batches reuse one transaction object, so its store is made once. */
  readonly #batchStores = new WeakMap<Executor, KyselyStore>()

  async transaction<T>(fn: (tx: Store) => Promise<T>, options?: TransactionOptions): Promise<T> {
    if (this.db.isTransaction) return fn(this)
    if (this.group && (this.group.joins === 'every' || options?.shared)) return this.group.run((trx) => fn(this.#batchStore(trx)))
    this.verify?.()
    // A controlled transaction, so that a failing ROLLBACK cannot hide the error that caused it:
    // SQLite rolls back by itself on SQLITE_FULL or an I/O error, and the ROLLBACK that follows
    // then fails with "cannot rollback - no transaction is active".
    const trx = await (this.db as Kysely<TurnchartDatabase>).startTransaction().execute()
    try {
      const result = await fn(new KyselyStore(trx, undefined, undefined, this.changes))
      await trx.commit().execute()
      return result
    } catch (error) {
      await trx.rollback().execute().catch(() => undefined)
      throw error
    }
  }

  #batchStore(trx: Executor): KyselyStore {
    let store = this.#batchStores.get(trx)
    if (!store) this.#batchStores.set(trx, (store = new KyselyStore(trx, undefined, undefined, this.changes)))
    return store
  }
}
