/**
 * One budget across engines, as the store sees it: a run tree's spending is added in the
 * transactions the turn writes anyway (a turn with a budget commits as many transactions as one
 * without), a model call reserved before it is made and its tokens settled after; and a reserve
 * that cannot be written fails closed: the turn fails, the call is not made.
 */
import { tool } from 'ai'
import { z } from 'zod'
import { createEngine, MemoryStore, type Store } from '../../src'
import { startScriptedServer, type ScriptedServer } from '../../src/testing'
import { modelFor } from '../support/harness'

let server: ScriptedServer
beforeAll(async () => {
  server = await startScriptedServer()
})
afterAll(() => server.close())

const tools = { read: tool({ description: 'Reads', inputSchema: z.object({ path: z.string() }), execute: async () => 'contents' }) }

/** A memory store that counts its transactions and the spending added outside one. */
class CountingStore extends MemoryStore {
  transactions = 0
  addsOutsideTransactions = 0
  failSpending = false
  constructor() {
    super()
    const add = this.spending.add.bind(this.spending)
    this.spending.add = (...args) => {
      this.addsOutsideTransactions++
      return add(...args)
    }
  }
  override transaction<T>(fn: (tx: Store) => Promise<T>): Promise<T> {
    this.transactions++
    return super.transaction((tx) => {
      if (this.failSpending && tx.spending) tx.spending.add = async () => Promise.reject(new Error('disk full (spending)'))
      return fn(tx)
    })
  }
}

async function runTurn(budget: { steps: number } | undefined, store: CountingStore) {
  server.tool('read', { path: 'a' }, { usage: { input: 11, output: 7 } })
  server.text('done', { usage: { input: 13, output: 3 } })
  const engine = await createEngine({ database: store, model: modelFor(server), tools, ...(budget ? { budget } : {}) })
  try {
    const session = await engine.createSession()
    const turn = engine.prompt(session.id, 'read a')
    return { result: await turn.done, turnId: turn.id }
  } finally {
    await engine.close()
  }
}

test('a budgeted tree spends in the transactions the turn writes anyway: reserved before each call, settled after', async () => {
  const plain = new CountingStore()
  const unbudgeted = await runTurn(undefined, plain)
  const budgeted = new CountingStore()
  const { result, turnId } = await runTurn({ steps: 10 }, budgeted)
  expect(result.outcome).toBe('completed')
  expect(budgeted.transactions).toBe(plain.transactions)
  expect(budgeted.addsOutsideTransactions).toBe(0)
  expect(await budgeted.spending.get(turnId)).toEqual({ tokens: { input: 24, output: 10 }, cost: 0, steps: 2 })
  // Without a budget no check reads the tree's spending: none is written.
  expect(await plain.spending.get(unbudgeted.turnId)).toBeUndefined()
})

test('a reserve that cannot be written fails closed: the turn fails and the model is not called', async () => {
  const store = new CountingStore()
  store.failSpending = true
  const calls = server.calls
  const { result } = await runTurn({ steps: 10 }, store)
  expect(result).toMatchObject({ outcome: 'failed', error: { name: 'StorageError' } })
  expect(server.calls).toBe(calls)
})
