/**
 * Budgets over a run tree, as pure rules: a budget's shape checked, three levels merged (the
 * engine's, the session's, the prompt's), and the first limit a tree's usage so far reaches.
 * The running tree keeps the usage in memory and asks here before each model call
 * (src/turn/run-tree/run-tree.ts).
 */
import type { Budget } from '../core/types'

/** What a run tree has spent so far, in the units of a budget. */
export interface TreeSpending {
  tokens: { input: number; output: number }
  cost: number
  /** Model calls made (retries and summary requests included). */
  steps: number
  /** Time since the root turn started. */
  wallMs: number
}

/** The limit a tree reached: its name in the budget (`tokens.output`, `cost`, …), the limit and the figure reached. */
export interface BudgetBreach {
  limit: 'tokens.input' | 'tokens.output' | 'tokens.total' | 'cost' | 'steps' | 'wallMs'
  max: number
  reached: number
}

const tokenKeys = ['input', 'output', 'total'] as const
const topKeys = ['tokens', 'cost', 'steps', 'wallMs'] as const

/**
 * Checks a budget's shape; throws `make(name, value, expected)` at the first wrong field.
 *
 * @example
 * validateBudget('budget', { tokens: { output: 4000 }, cost: 0.5 }, (n, v, e) => new InvalidOptionError(n, v, e))
 */
export function validateBudget(name: string, value: unknown, make: (name: string, value: unknown, expected: string) => Error): Budget {
  const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)
  if (!isObject(value)) throw make(name, value, 'an object like { tokens: { output }, cost, steps, wallMs }')
  const limit = (field: string, v: unknown) => {
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) throw make(`${name}.${field}`, v, 'a finite number >= 0')
  }
  for (const key of Object.keys(value)) {
    if (!(topKeys as readonly string[]).includes(key)) throw make(`${name}.${key}`, value[key], `one of ${topKeys.join(', ')}`)
    if (value[key] === undefined) continue
    if (key !== 'tokens') {
      limit(key, value[key])
      continue
    }
    const tokens = value.tokens
    if (!isObject(tokens)) throw make(`${name}.tokens`, tokens, 'an object like { input, output, total }')
    for (const tokenKey of Object.keys(tokens)) {
      if (!(tokenKeys as readonly string[]).includes(tokenKey)) throw make(`${name}.tokens.${tokenKey}`, tokens[tokenKey], `one of ${tokenKeys.join(', ')}`)
      if (tokens[tokenKey] !== undefined) limit(`tokens.${tokenKey}`, tokens[tokenKey])
    }
  }
  return value as Budget
}

/**
 * The budget of a tree: later levels win, field by field (a prompt's `cost` over the session's,
 * the session's `tokens.output` over the engine's). Undefined when no level sets anything.
 *
 * @example
 * mergeBudgets({ cost: 1 }, undefined, { tokens: { output: 500 } }) // { cost: 1, tokens: { output: 500 } }
 */
export function mergeBudgets(...levels: Array<Budget | undefined>): Budget | undefined {
  const merged: Budget = {}
  for (const level of levels) {
    if (!level) continue
    const { tokens, ...rest } = level
    for (const [key, v] of Object.entries(rest)) if (v !== undefined) (merged as Record<string, unknown>)[key] = v
    if (tokens) {
      const defined = Object.fromEntries(Object.entries(tokens).filter(([, v]) => v !== undefined))
      if (Object.keys(defined).length > 0) merged.tokens = { ...merged.tokens, ...defined }
    }
  }
  return Object.keys(merged).length > 0 ? merged : undefined
}

/**
 * The first limit `spent` has reached (a figure at or over its limit: the next call would go
 * past it), or null. Checked before a model call: at `tokens.output: 100` a tree that has
 * streamed 100 output tokens makes no further call.
 *
 * @example
 * budgetBreach({ tokens: { output: 100 } }, { tokens: { input: 40, output: 120 }, cost: 0, steps: 2, wallMs: 900 })
 * // { limit: 'tokens.output', max: 100, reached: 120 }
 */
export function budgetBreach(budget: Budget | undefined, spent: TreeSpending): BudgetBreach | null {
  if (!budget) return null
  const checks: Array<[BudgetBreach['limit'], number | undefined, number]> = [
    ['tokens.input', budget.tokens?.input, spent.tokens.input],
    ['tokens.output', budget.tokens?.output, spent.tokens.output],
    ['tokens.total', budget.tokens?.total, spent.tokens.input + spent.tokens.output],
    ['cost', budget.cost, spent.cost],
    ['steps', budget.steps, spent.steps],
    ['wallMs', budget.wallMs, spent.wallMs],
  ]
  for (const [limit, max, reached] of checks) if (max !== undefined && reached >= max) return { limit, max, reached }
  return null
}
