/**
 * A run tree in memory: a root turn and every child turn its tools start (and theirs), sharing
 * one budget. The tree keeps what its turns have spent here (tokens, cost, model calls) as they
 * spend it; a tree an engine joins late (recovery, or a child run on another engine than its
 * root) loads its budget and what was spent so far once, from the stored rows, before its first
 * check.
 *
 * One budget across engines: with a store that keeps trees' spending (`Store.spending`), what
 * this engine's turns spend is also added to the tree's stored row (for a tree with a budget:
 * nothing else reads that row), in the transactions that write their rows (`rider()`: a model
 * call is reserved in the transaction of the row into the state that makes it, before the call,
 * whose write-ahead gate waits for that commit; its tokens and cost ride with the row that
 * follows it). The check before each model call then reads the stored row (every engine's
 * spending) plus what this engine has not written yet.
 */
import { BudgetExceededError } from '../../core/errors'
import type { Budget, Usage } from '../../core/types'
import { budgetBreach, type TreeSpending } from '../../policy/budget'
import type { Store, TreeSpent } from '../../store/store'
import { TreeInspection } from './tree-inspection'

/** A write that rides in the transaction of a turn's rows, and what puts it back when that transaction rolls back. */
export interface RiddenWrite {
  write(tx: Pick<Store, 'spending'>): Promise<void>
  rolledBack(): void
}

/** What a tree that joins late reads once: the root's budget and start, and what was spent before. */
export interface TreeLoad {
  budget: Budget | undefined
  startedAt: number
  spent: { tokens: { input: number; output: number }; cost: number; steps: number }
}

export interface RunTreeOptions {
  rootTurnId: string
  /** When the root turn started (the wall time counts from here). */
  startedAt: number
  /** The budget, read at each check (the root's configuration is resolved after its tree exists). */
  budget?: () => Budget | undefined
  /** A tree joined late: its budget and spending so far, read once before the first check. */
  load?: () => Promise<TreeLoad>
  /** The tree's stored spending, every engine's (a store that keeps it); read at each check. */
  stored?: () => Promise<TreeSpent | undefined>
  now?: () => number
}

const zero = (): TreeSpent => ({ tokens: { input: 0, output: 0 }, cost: 0, steps: 0 })

function addTo(into: TreeSpent, more: TreeSpent): void {
  into.tokens.input += more.tokens.input
  into.tokens.output += more.tokens.output
  into.cost += more.cost
  into.steps += more.steps
}

export class RunTree {
  readonly rootTurnId: string
  readonly #options: RunTreeOptions
  #startedAt: number
  #loaded: Promise<void> | undefined
  #budget: Budget | undefined
  readonly #spent = { tokens: { input: 0, output: 0 }, cost: 0, steps: 0 }
  /** What this engine's turns spent that is not in the stored row yet (taken by the next row's transaction). */
  #unstored: TreeSpent = zero()
  /** The turn of a call a gate admitted that `#unstored` holds: its write is conditional on the budget's `steps`. */
  #unstoredAdmitted: string | undefined
  /** The stored row as last read (every engine's spending then); null before the first read. */
  #lastStored: TreeSpent | null = null
  /** The first refusal: every later check in the tree gives the same error (the limit, the figure, the turn that hit it). */
  #breach: BudgetExceededError | null = null
  /** The tree's turns running in this engine (the tree is forgotten when none is left). */
  members = 0
  /** How the tree's turns running here appear in the app's inspector (children under their parent). */
  readonly inspection = new TreeInspection()

  constructor(options: RunTreeOptions) {
    this.rootTurnId = options.rootTurnId
    this.#options = options
    this.#startedAt = options.startedAt
  }

  /**
   * Before a model call of `turnId`: null when the call may be made (it is counted), or the
   * budget error when the tree has reached a limit (the call must not be made).
   *
   * @example
   * const refused = await tree.admit(scope.turnId)
   * if (refused) return { type: 'turn.fail', error: refused.toJSON() }
   */
  async admit(turnId: string, options: { readStored?: boolean } = {}): Promise<BudgetExceededError | null> {
    await this.#load()
    if (this.#breach) return this.#breach
    const budget = this.#options.budget?.() ?? this.#budget
    // Every engine's spending when the store keeps it (a read, no commit; a read that fails fails
    // the gate: no call). Not at a turn's first gate, which runs inside its prompt's transaction
    // (on SQLite a read from outside it would wait for it): there, the last read stands.
    if (budget && this.#options.stored && options.readStored !== false) this.#lastStored = (await this.#options.stored()) ?? null
    const spending: TreeSpending = { ...this.#known(), wallMs: (this.#options.now ?? Date.now)() - this.#startedAt }
    const breach = budgetBreach(budget, spending)
    if (breach) {
      this.#breach = new BudgetExceededError({ ...breach, turnId })
      return this.#breach
    }
    this.called() // reserved: written with the row into the state that makes the call, before it
    this.#unstoredAdmitted = turnId
    return null
  }

  /** A model call the step gate did not admit (a retry, a summary): counted, checked at the next gate. */
  called(): void {
    this.#spent.steps += 1
    this.#unstored.steps += 1
  }

  /** A model call of the tree finished: its tokens and cost join the tree's. */
  spend(usage: Usage | undefined): void {
    if (!usage) return
    const spent: TreeSpent = { tokens: { input: usage.tokens.input, output: usage.tokens.output }, cost: usage.cost, steps: 0 }
    addTo(this.#spent, spent)
    addTo(this.#unstored, spent)
  }

  /**
   * What the next transaction of one of the tree's turns here adds to the tree's stored
   * spending (undefined when nothing is to be added); put back when that transaction rolls back.
   * A call a gate admitted is written only if the tree's stored steps stay within the budget's
   * (judged under the row's lock: two engines' gates that read the same figure cannot both
   * pass); refused, the write throws the budget error and the transaction, with the row into
   * the state that would make the call, rolls back.
   */
  rider(): RiddenWrite | undefined {
    const delta = this.#unstored
    const admitted = this.#unstoredAdmitted
    if (delta.steps === 0 && delta.tokens.input === 0 && delta.tokens.output === 0 && delta.cost === 0) return undefined
    // A tree without a budget: its stored spending is read by no check, so it is not written
    // (two statements a step saved). What it spent stays in `#unstored`, written by the first
    // row once a budget is known (a tree joined late learns it at its first gate).
    const budget = this.#options.budget?.() ?? this.#budget
    if (!budget) return undefined
    this.#unstored = zero()
    this.#unstoredAdmitted = undefined
    const maxSteps = admitted !== undefined ? budget.steps : undefined
    let refused = false
    return {
      write: async (tx) => {
        const added = await tx.spending?.add(this.rootTurnId, delta, (this.#options.now ?? Date.now)(), maxSteps)
        if (added !== false) return
        refused = true
        throw (this.#breach ??= new BudgetExceededError({ limit: 'steps', max: maxSteps!, reached: maxSteps!, turnId: admitted! }))
      },
      rolledBack: () => {
        addTo(this.#unstored, delta)
        if (!refused) {
          this.#unstoredAdmitted ??= admitted
          return
        }
        // The admitted call will not be made: it is counted no more (the rest is written with a later row).
        this.#unstored.steps -= 1
        this.#spent.steps -= 1
      },
    }
  }

  /** The tree's spending as far as this engine knows: the last stored row read with what it has not written since, or its own count when that is more. */
  #known(): TreeSpent {
    if (!this.#lastStored) return this.#spent
    const known: TreeSpent = { tokens: { ...this.#lastStored.tokens }, cost: this.#lastStored.cost, steps: this.#lastStored.steps }
    addTo(known, this.#unstored)
    return {
      tokens: { input: Math.max(known.tokens.input, this.#spent.tokens.input), output: Math.max(known.tokens.output, this.#spent.tokens.output) },
      cost: Math.max(known.cost, this.#spent.cost),
      steps: Math.max(known.steps, this.#spent.steps),
    }
  }

  /** What the tree has spent so far (tokens, cost, model calls). */
  get spent(): Readonly<TreeLoad['spent']> {
    return this.#spent
  }

  #load(): Promise<void> {
    const load = this.#options.load
    if (!load) return Promise.resolve()
    // (a load that failed, the database out, is tried again at the next gate instead of failing every one)
    this.#loaded ??= load().then(
      (loaded) => {
        this.#budget = loaded.budget
        this.#startedAt = loaded.startedAt
        this.#spent.tokens.input += loaded.spent.tokens.input
        this.#spent.tokens.output += loaded.spent.tokens.output
        this.#spent.cost += loaded.spent.cost
        this.#spent.steps += loaded.spent.steps
      },
      (error: unknown) => {
        this.#loaded = undefined
        throw error
      },
    )
    return this.#loaded
  }
}
