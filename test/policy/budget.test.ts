/** Budgets as pure rules: a budget's shape, three levels merged field by field, the first limit reached. */
import { budgetBreach, InvalidArgumentError, mergeBudgets } from '../../src'
import { validateBudget } from '../../src/policy/budget'

const spent = (over: Partial<{ input: number; output: number; cost: number; steps: number; wallMs: number }> = {}) => ({
  tokens: { input: over.input ?? 0, output: over.output ?? 0 },
  cost: over.cost ?? 0,
  steps: over.steps ?? 0,
  wallMs: over.wallMs ?? 0,
})

test('no budget, or figures under every limit: no breach', () => {
  expect(budgetBreach(undefined, spent({ output: 1e9 }))).toBeNull()
  expect(budgetBreach({ tokens: { output: 100 }, cost: 1, steps: 3, wallMs: 1000 }, spent({ output: 99, cost: 0.99, steps: 2, wallMs: 999 }))).toBeNull()
})

test.each([
  [{ tokens: { input: 10 } }, spent({ input: 10 }), { limit: 'tokens.input', max: 10, reached: 10 }],
  [{ tokens: { output: 100 } }, spent({ output: 120 }), { limit: 'tokens.output', max: 100, reached: 120 }],
  [{ tokens: { total: 50 } }, spent({ input: 30, output: 25 }), { limit: 'tokens.total', max: 50, reached: 55 }],
  [{ cost: 0.5 }, spent({ cost: 0.5 }), { limit: 'cost', max: 0.5, reached: 0.5 }],
  [{ steps: 3 }, spent({ steps: 3 }), { limit: 'steps', max: 3, reached: 3 }],
  [{ wallMs: 60_000 }, spent({ wallMs: 60_001 }), { limit: 'wallMs', max: 60_000, reached: 60_001 }],
])('a figure at or past its limit is a breach: %j', (budget, figures, breach) => {
  expect(budgetBreach(budget, figures)).toEqual(breach)
})

test('levels merge field by field, later winning, tokens too', () => {
  expect(mergeBudgets({ cost: 1, tokens: { input: 10, output: 20 } }, undefined, { tokens: { output: 5 } }, { steps: 2 })).toEqual({ cost: 1, tokens: { input: 10, output: 5 }, steps: 2 })
  expect(mergeBudgets(undefined, {})).toBeUndefined()
})

test.each([
  ['not an object', 5, 'budget'],
  ['an unknown field', { time: 5 }, 'budget.time'],
  ['a negative limit', { cost: -1 }, 'budget.cost'],
  ['a limit that is not a number', { steps: '3' }, 'budget.steps'],
  ['an unknown token field', { tokens: { outputs: 3 } }, 'budget.tokens.outputs'],
  ['tokens that are not an object', { tokens: 3 }, 'budget.tokens'],
])('a budget with %s is refused, naming the field', (_name, value, field) => {
  expect(() => validateBudget('budget', value, (name, v, expected) => new InvalidArgumentError(name, v, expected))).toThrow(expect.objectContaining({ argument: field }))
})
