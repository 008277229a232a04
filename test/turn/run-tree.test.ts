/** A run tree in memory: admits model calls while under its budget, counts them, and refuses them all with the first breach. */
import { BudgetExceededError } from '../../src'
import { RunTree } from '../../src/turn/run-tree/run-tree'

const tokens = (input: number, output: number) => ({ input, output, reasoning: 0, cache: { read: 0, write: 0 } })

test('calls are admitted and counted until a limit is reached; every later call, in any turn, gets the same error', async () => {
  const tree = new RunTree({ rootTurnId: 'trn_root', startedAt: 0, now: () => 10, budget: () => ({ tokens: { output: 10 }, steps: 5 }) })
  expect(await tree.admit('trn_root')).toBeNull()
  tree.spend({ tokens: tokens(3, 6), cost: 0 })
  expect(await tree.admit('trn_child')).toBeNull()
  tree.spend({ tokens: tokens(3, 6), cost: 0 })
  expect(tree.spent).toEqual({ tokens: { input: 6, output: 12 }, cost: 0, steps: 2 })
  const refused = await tree.admit('trn_child')
  expect(BudgetExceededError.isInstance(refused)).toBe(true)
  expect(refused).toMatchObject({ limit: 'tokens.output', max: 10, reached: 12, turnId: 'trn_child' })
  expect(await tree.admit('trn_root')).toBe(refused)
  expect(tree.spent.steps).toBe(2) // refused calls are not counted
})

test('the wall time counts from the root turn start', async () => {
  let now = 1_000
  const tree = new RunTree({ rootTurnId: 'trn_root', startedAt: 1_000, now: () => now, budget: () => ({ wallMs: 500 }) })
  expect(await tree.admit('trn_root')).toBeNull()
  now = 1_500
  expect(await tree.admit('trn_root')).toMatchObject({ limit: 'wallMs', max: 500, reached: 500 })
})

test('a tree joined late loads its budget and what was spent once, before its first check, then counts in memory', async () => {
  const load = jest.fn(async () => ({ budget: { steps: 4 }, startedAt: 0, spent: { tokens: { input: 1, output: 2 }, cost: 0.1, steps: 3 } }))
  const tree = new RunTree({ rootTurnId: 'trn_root', startedAt: 99, now: () => 100, load })
  expect(await tree.admit('trn_child')).toBeNull()
  expect(await tree.admit('trn_child')).toMatchObject({ limit: 'steps', max: 4, reached: 4 })
  expect(load).toHaveBeenCalledTimes(1)
})
