/**
 * The step gate through a real engine: each rule's verdict and the edge it takes from
 * `step-gate` (continue, complete, fail, the budget's own edge, an app's rule), and the gate's
 * cost: its rows ride in the transactions the turn made anyway, so a step costs as many
 * commits as before the gate (counted on the store's transactions).
 */
import { tool } from 'ai'
import { z } from 'zod'
import type { StepRule, StepRuleInput } from '../../src'
import { MemoryStore } from '../../src/store/memory/memory-store'
import { createHarness, type Harness } from '../support/harness'

let h: Harness | undefined
afterEach(async () => {
  await h?.close()
  h = undefined
})

const lookup = tool({ description: 'Look up', inputSchema: z.object({ q: z.string() }), execute: async ({ q }) => `found ${q}` })
const log = async (turnId: string) => (await h!.engine.transitions(turnId)).map((r) => `${r.from} --${r.event}--> ${r.to}`)

/** A memory store that counts its transactions (each one commit). */
function countingStore(): { store: MemoryStore; commits: () => number } {
  const store = new MemoryStore()
  let commits = 0
  const transaction = store.transaction.bind(store)
  store.transaction = ((fn: Parameters<MemoryStore['transaction']>[0]) => {
    commits += 1
    return transaction(fn)
  }) as MemoryStore['transaction']
  return { store, commits: () => commits }
}

test('the gate adds no commit: a turn of two tool steps and an answer commits the prompt and one row per state that acts, as before the gate', async () => {
  const { store, commits } = countingStore()
  // (parts only with the rows: no timed flush in between)
  h = await createHarness({ database: store, tools: { lookup }, flushIntervalMs: 60_000 })
  h.server.tool('lookup', { q: 'a' })
  h.server.tool('lookup', { q: 'b' })
  h.server.text('done')
  const session = await h.engine.createSession()
  const before = commits()
  const result = await h.engine.prompt(session.id, 'look twice').done
  expect(result.outcome).toBe('completed')
  // 1 the prompt (with idle → step-gate → streaming), per tool step 2 (→ tool-running, → streaming: the tool actor decides the gate), 1 the answer (→ completed).
  // Before the gate: 1 (idle → streaming), per tool step 2 (→ tool-running, → streaming), 1: the same 6.
  expect(commits() - before).toBe(6)
  expect(await log(result.turnId)).toEqual([
    'idle --turn.start--> step-gate',
    'step-gate --gate.continue--> streaming',
    'streaming --step.finished--> tool-running',
    'tool-running --gate.continue--> streaming',
    'streaming --step.finished--> tool-running',
    'tool-running --gate.continue--> streaming',
    'streaming --step.finished--> completed',
  ])
})

test("an app's rule is asked at every gate, before the first call too, and its `complete` ends the turn completed", async () => {
  const asked: StepRuleInput[] = []
  const enough: StepRule = {
    name: 'enough-lookups',
    decide: (input) => {
      asked.push(structuredClone(input))
      return input.steps.length >= 1 ? { verdict: 'complete' } : undefined
    },
  }
  h = await createHarness({ tools: { lookup }, stepRules: [enough] })
  h.server.tool('lookup', { q: 'a' })
  h.server.text('never asked for')
  const session = await h.engine.createSession()
  const result = await h.engine.prompt(session.id, 'look').done
  expect(result.outcome).toBe('completed')
  expect(h.server.calls).toBe(1)
  expect(asked.map((a) => [a.stepNumber, a.steps.length])).toEqual([
    [0, 0],
    [1, 1],
  ])
  expect(asked[1].steps[0].toolResults).toMatchObject([{ toolName: 'lookup', output: 'found a' }])
  // (after a step's tools the tool actor decides the gate: the verdict leaves tool-running)
  expect((await h.engine.transitions(result.turnId)).at(-1)).toMatchObject({ from: 'tool-running', event: 'gate.complete', to: 'completed', payload: { rule: 'enough-lookups' } })
})

test("an app's rule that fails the turn: `step-gate --gate.fail--> failed` with its error and its name; before the first call, no request is made", async () => {
  const closed: StepRule = { name: 'office-hours', decide: () => ({ verdict: 'fail', error: new RangeError('outside office hours') }) }
  h = await createHarness({ stepRules: [closed] })
  const session = await h.engine.createSession()
  const result = await h.engine.prompt(session.id, 'hi').done
  expect(result).toMatchObject({ outcome: 'failed', error: { message: expect.stringContaining('outside office hours') } })
  expect(h.server.calls).toBe(0)
  expect(await log(result.turnId)).toEqual(['idle --turn.start--> step-gate', 'step-gate --gate.fail--> failed'])
  expect((await h.engine.transitions(result.turnId)).at(-1)?.payload).toMatchObject({ rule: 'office-hours' })
})

test('a rule that throws fails the turn, naming it', async () => {
  const broken: StepRule = {
    name: 'broken',
    decide: () => {
      throw new Error('rule broke')
    },
  }
  h = await createHarness({ stepRules: [broken] })
  const session = await h.engine.createSession()
  const result = await h.engine.prompt(session.id, 'hi').done
  expect(result).toMatchObject({ outcome: 'failed', error: { message: expect.stringContaining("the step rule 'broken' threw: rule broke") } })
  expect(h.server.calls).toBe(0)
})

test('the budget has its own edge: `tool-running --budget.exceeded--> failed` after the tools (as `step-gate --budget.exceeded--> failed`), BudgetExceededError, the next call not made', async () => {
  h = await createHarness({ tools: { lookup }, budget: { steps: 1 } })
  h.server.tool('lookup', { q: 'a' })
  h.server.text('never asked for')
  const session = await h.engine.createSession()
  const result = await h.engine.prompt(session.id, 'look').done
  expect(result).toMatchObject({ outcome: 'failed', error: { name: 'BudgetExceededError', limit: 'steps', max: 1 } })
  expect(h.server.calls).toBe(1)
  expect((await log(result.turnId)).slice(-2)).toEqual(['streaming --step.finished--> tool-running', 'tool-running --budget.exceeded--> failed'])
})

test('stepRules that are not { name, decide } with unique names are refused, naming the option', async () => {
  h = await createHarness()
  const { createEngine, InvalidOptionError } = await import('../../src')
  const { modelFor } = await import('../support/harness')
  await expect(createEngine({ model: modelFor(h.server), stepRules: [{ name: 'x' }] as never })).rejects.toThrow(InvalidOptionError)
  const rule: StepRule = { name: 'same', decide: () => undefined }
  await expect(createEngine({ model: modelFor(h.server), stepRules: [rule, rule] })).rejects.toThrow(/stepRules\[1\]/)
})
