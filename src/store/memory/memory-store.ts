/**
 * The store in memory: the contract of store.ts over plain Maps, no database, no I/O. For tests
 * and quick starts; nothing survives the process. Several engines of one process may share one
 * instance (`createEngine({ database: store })`), as they would share a database.
 *
 * It behaves as the Kysely store on SQLite does, which the conformance suite
 * (test/store/conformance) checks on all three: calls and transactions run one at a time (a
 * call made while a transaction runs waits for it, as on SQLite's single connection); a
 * transaction's writes all stay or, when it throws, are all undone (an undo journal); primary
 * and foreign keys are enforced as the SQL schema enforces them; rows are kept as the SQL
 * columns hold them, JSON as text, so each read is a copy and callers cannot change what is stored.
 * As on SQLite, a transaction that calls the store it came from (not its `tx`) waits for itself.
 *
 * @example
 * const store = new MemoryStore()
 * const engine = await createEngine({ database: store, model })
 */
import type { Store } from '../store'
import { autocommit, inTransaction, type Access } from './access'
import { MemoryControls } from './controls'
import { MemoryMessages } from './messages'
import { Mutex } from './mutex'
import { storeChanges, type StoreChanges } from '../table-changes'
import { MemoryQueue } from './queue'
import { MemorySchedules } from './schedules'
import { MemoryCircuits } from './circuits'
import { MemorySessions } from './sessions'
import { MemorySpending } from './spending'
import { MemorySlots } from './slots'
import { Journal, Tables } from './tables'
import { MemoryTransitions } from './transitions'
import { MemoryTurns } from './turns'

/** The aggregates over one way into the tables (calls of their own, or one transaction's). */
abstract class MemoryAggregates implements Store {
  readonly sessions: MemorySessions
  readonly messages: MemoryMessages
  readonly turns: MemoryTurns
  readonly transitions: MemoryTransitions
  readonly queue: MemoryQueue
  readonly controls: MemoryControls
  readonly spending: MemorySpending
  readonly slots: MemorySlots
  readonly schedules: MemorySchedules
  readonly circuits: MemoryCircuits

  constructor(access: Access, changes: Required<StoreChanges>) {
    this.sessions = new MemorySessions(access)
    this.messages = new MemoryMessages(access)
    this.turns = new MemoryTurns(access)
    this.transitions = new MemoryTransitions(access)
    this.queue = new MemoryQueue(access, changes.queue)
    this.controls = new MemoryControls(access)
    this.spending = new MemorySpending(access)
    this.slots = new MemorySlots(access)
    this.schedules = new MemorySchedules(access)
    this.circuits = new MemoryCircuits(access, changes.circuits)
  }

  abstract transaction<T>(fn: (tx: Store) => Promise<T>): Promise<T>
}

export class MemoryStore extends MemoryAggregates {
  readonly #tables: Tables
  readonly #mutex: Mutex
  /** Only this object writes its tables: the writes through it and its transactions are all there is to count. */
  readonly #changes: Required<StoreChanges>

  constructor() {
    const tables = new Tables()
    const mutex = new Mutex()
    const changes = storeChanges()
    super(autocommit(tables, mutex), changes)
    this.#tables = tables
    this.#mutex = mutex
    this.#changes = changes
  }

  async transaction<T>(fn: (tx: Store) => Promise<T>): Promise<T> {
    const release = await this.#mutex.lock()
    const journal = new Journal()
    this.#tables.journal = journal
    const tx = new MemoryTransaction(this.#tables, journal, this.#changes)
    try {
      return await fn(tx)
    } catch (error) {
      this.#tables.undo(journal)
      throw error
    } finally {
      tx.end()
      this.#tables.journal = undefined
      release()
    }
  }
}

/** The store bound to one transaction: its calls run at once (the transaction holds the mutex); unusable once it ended. */
class MemoryTransaction extends MemoryAggregates {
  constructor(
    tables: Tables,
    journal: Journal,
    changes: Required<StoreChanges>,
    private readonly state = { open: true },
  ) {
    super(inTransaction(tables, journal, () => state.open), changes)
  }

  /** Joins this transaction. */
  transaction<T>(fn: (tx: Store) => Promise<T>): Promise<T> {
    return fn(this)
  }

  end(): void {
    this.state.open = false
  }
}
