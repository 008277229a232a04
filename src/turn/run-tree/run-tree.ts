/**
 * A run tree in memory: a root turn and every child turn its tools start (and theirs), sharing
 * one budget. The tree keeps what its turns have spent (tokens, cost, model calls) in memory
 * as they spend it, so the check before each model call reads no row; a tree an engine joins
 * late (recovery, or a child run on another engine than its root) loads its budget and what was
 * spent so far once, from the stored rows, before its first check.
 */
import { BudgetExceededError } from '../../core/errors'
import type { Budget, Usage } from '../../core/types'
import { budgetBreach, type TreeSpending } from '../../policy/budget'
import { TreeInspection } from './tree-inspection'

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
  now?: () => number
}

export class RunTree {
  readonly rootTurnId: string
  readonly #options: RunTreeOptions
  #startedAt: number
  #loaded: Promise<void> | undefined
  #budget: Budget | undefined
  readonly #spent = { tokens: { input: 0, output: 0 }, cost: 0, steps: 0 }
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
  async admit(turnId: string): Promise<BudgetExceededError | null> {
    await this.#load()
    if (this.#breach) return this.#breach
    const now = (this.#options.now ?? Date.now)()
    const budget = this.#options.budget?.() ?? this.#budget
    const spending: TreeSpending = { ...this.#spent, wallMs: now - this.#startedAt }
    const breach = budgetBreach(budget, spending)
    if (breach) {
      this.#breach = new BudgetExceededError({ ...breach, turnId })
      return this.#breach
    }
    this.#spent.steps += 1
    return null
  }

  /** A model call the step gate did not admit (a retry, a summary): counted, checked at the next gate. */
  called(): void {
    this.#spent.steps += 1
  }

  /** A model call of the tree finished: its tokens and cost join the tree's. */
  spend(usage: Usage | undefined): void {
    if (!usage) return
    this.#spent.tokens.input += usage.tokens.input
    this.#spent.tokens.output += usage.tokens.output
    this.#spent.cost += usage.cost
  }

  /** What the tree has spent so far (tokens, cost, model calls). */
  get spent(): Readonly<TreeLoad['spent']> {
    return this.#spent
  }

  #load(): Promise<void> {
    const load = this.#options.load
    if (!load) return Promise.resolve()
    this.#loaded ??= load().then((loaded) => {
      this.#budget = loaded.budget
      this.#startedAt = loaded.startedAt
      this.#spent.tokens.input += loaded.spent.tokens.input
      this.#spent.tokens.output += loaded.spent.tokens.output
      this.#spent.cost += loaded.spent.cost
      this.#spent.steps += loaded.spent.steps
    })
    return this.#loaded
  }
}
