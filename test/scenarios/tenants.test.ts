/**
 * Tenants: a session's tenant is stored (read back, kept by a fork and by a run tree's child
 * sessions), and a tenant's usage is its sessions' run trees summed. `concurrency`: a tenant at
 * its limit queues its next prompt while another tenant's runs (two engines on PostgreSQL), and
 * queued prompts are taken round robin between tenants, whichever engine dequeues them.
 */
import { tool } from 'ai'
import { z } from 'zod'
import { agentTool, createEngine, type Engine, type TurnchartEvent } from '../../src'
import { createHarness, modelFor, postgresOnly, sqliteOnly, type Harness } from '../support/harness'

let h: Harness
let b: Engine | undefined
afterEach(async () => {
  await b?.close()
  b = undefined
  await h?.close()
})

test("a tenant's sessions, forks and child sessions carry it; tenantUsage sums its sessions' trees", async () => {
  const tools = { helper: agentTool({ description: 'A helper', inputSchema: z.object({ task: z.string() }), toPrompt: ({ task }) => task }) }
  h = await createHarness({ tools })
  const a = await h.engine.createSession({ tenant: 'acme' })
  const b = await h.engine.createSession({ tenant: 'acme', title: 'second' })
  const other = await h.engine.createSession({ tenant: 'globex' })
  expect(a.tenant).toBe('acme')
  expect(await h.engine.getSession(b.id)).toMatchObject({ tenant: 'acme', title: 'second' })

  h.server.text('one', { usage: { input: 10, output: 5 } })
  await h.engine.prompt(a.id, 'hi').done
  // A run tree: the parent's two calls and its child's one all count for the tenant.
  h.server.tool('helper', { task: 'look' }, { usage: { input: 1, output: 1 } })
  h.server.text('looked', { usage: { input: 2, output: 2 } })
  h.server.text('two', { usage: { input: 3, output: 3 } })
  const parent = h.engine.prompt(b.id, 'delegate')
  expect((await parent.done).outcome).toBe('completed')
  const [child] = await h.engine.childTurns(parent.id)
  expect(await h.engine.getSession(child.sessionId)).toMatchObject({ tenant: 'acme', parentSessionId: b.id })
  h.server.text('other', { usage: { input: 100, output: 100 } })
  await h.engine.prompt(other.id, 'hi').done

  expect(await h.engine.tenantUsage('acme')).toMatchObject({ tenant: 'acme', sessions: 2, tokens: { input: 16, output: 11 } })
  expect(await h.engine.tenantUsage('globex')).toMatchObject({ sessions: 1, tokens: { input: 100, output: 100 } })
  expect(await h.engine.tenantUsage('nobody')).toMatchObject({ sessions: 0, tokens: { input: 0, output: 0 }, cost: 0 })

  const [first] = await h.engine.messages(a.id)
  expect(await h.engine.fork(a.id, first.info.id)).toMatchObject({ tenant: 'acme' })
  await expect(h.engine.createSession({ tenant: '' })).rejects.toMatchObject({ name: 'InvalidArgumentError', argument: 'tenant' })
  await expect(h.engine.createSession({ tenant: 42 as never })).rejects.toMatchObject({ name: 'InvalidArgumentError' })
})

/** A tool that runs until the test lets it finish: the turn holds its slot meanwhile. */
function holdTool() {
  let release!: () => void
  let entered!: () => void
  const released = new Promise<void>((resolve) => (release = resolve))
  const running = new Promise<void>((resolve) => (entered = resolve))
  const hold = tool({
    description: 'Holds',
    inputSchema: z.object({}),
    execute: async () => {
      entered()
      await released
      return 'held'
    },
  })
  return { hold, release, running }
}

/**
 * Ends the holding turn and answers the queued prompts one by one: each text says the order its
 * prompt's turn started in (`answer 1` first). Resolves with the queued prompts' texts.
 */
async function answeredInOrder(holding: { done: Promise<unknown> }, release: () => void, queued: Array<{ done: Promise<{ text: string }> }>): Promise<string[]> {
  h.server.text('x done')
  for (const n of [1, 2, 3, 4]) h.server.text(`answer ${n}`)
  release()
  await holding.done
  return (await Promise.all(queued.map((q) => q.done))).map((r) => r.text)
}

test('a scheduled turn takes a tenant slot like a prompt: at the limit its occurrence waits in the queue, and runs once the slot frees', async () => {
  const { hold, release, running } = holdTool()
  h = await createHarness({ tools: { hold }, concurrency: { perTenant: 1 } })
  const busy = await h.engine.createSession({ tenant: 'acme' })
  const reports = await h.engine.createSession({ tenant: 'acme' })
  h.server.tool('hold', {})
  const holding = h.engine.prompt(busy.id, 'hold')
  await running
  const { id } = await h.engine.schedule({ sessionId: reports.id, input: 'write the report', at: Date.now() })
  const fired = (await h.waitForEvent((e) => e.type === 'schedule.fired' && e.scheduleId === id)) as Extract<TurnchartEvent, { type: 'schedule.fired' }>
  // acme runs its limit: the occurrence's turn waits in the session's queue.
  expect((await h.engine.queue(reports.id)).map((q) => q.id)).toEqual([fired.turnId])
  h.server.text('held long enough')
  h.server.text('report written')
  release()
  expect((await holding.done).outcome).toBe('completed')
  await h.waitForEvent((e) => e.type === 'turn.transition' && e.turnId === fired.turnId && e.to === 'completed')
  expect(await h.engine.queue(reports.id)).toEqual([])
})

postgresOnly("a tenant at its limit queues its next prompt while another tenant's runs, across two engines", async () => {
  const { hold, release, running } = holdTool()
  const options = { tools: { hold }, concurrency: { perTenant: 1 }, controlPollIntervalMs: 50 }
  h = await createHarness(options)
  b = await createEngine({ database: h.dbPath, model: modelFor(h.server), ...options })
  const s1 = await h.engine.createSession({ tenant: 'acme' })
  const s2 = await b.createSession({ tenant: 'acme' })
  const s3 = await b.createSession({ tenant: 'globex' })
  const s4 = await b.createSession({ tenant: 'acme' })

  h.server.tool('hold', {})
  const first = h.engine.prompt(s1.id, 'hold on A')
  await running
  // On B: acme is at its limit (its turn runs on A): the prompt waits in the queue; globex's runs at once.
  const queued = b.prompt(s2.id, 'acme again', { whenBusy: 'enqueue' })
  await queued.stored
  h.server.text('globex answered')
  const other = b.prompt(s3.id, 'globex', { whenBusy: 'enqueue' })
  expect((await other.done).text).toBe('globex answered')
  expect((await b.queue(s2.id)).map((q) => q.id)).toEqual([queued.id])
  // A direct prompt over the limit is refused, nothing stored.
  await expect(b.prompt(s4.id, 'now').done).rejects.toMatchObject({ name: 'ConcurrencyLimitError', limit: 'perTenant', max: 1, tenant: 'acme' })

  h.server.text('first done')
  h.server.text('acme answered')
  release()
  expect((await first.done).outcome).toBe('completed')
  expect(await queued.done).toMatchObject({ outcome: 'completed', text: 'acme answered' })
})

sqliteOnly('queued prompts are taken fairly, tenant by tenant, not first come', async () => {
  const { hold, release, running } = holdTool()
  h = await createHarness({ tools: { hold }, concurrency: { total: 1 } })
  const x = await h.engine.createSession({ tenant: 'a' })
  const a = await Promise.all([1, 2, 3].map(() => h.engine.createSession({ tenant: 'a' })))
  const bee = await h.engine.createSession({ tenant: 'b' })
  h.server.tool('hold', {})
  const holding = h.engine.prompt(x.id, 'hold')
  await running
  // Queued in this order: a, a, a, then b.
  const queued = []
  for (const s of [...a, bee]) {
    const q = h.engine.prompt(s.id, 'go', { whenBusy: 'enqueue' })
    await q.stored
    queued.push(q)
  }
  const texts = await answeredInOrder(holding, release, queued)
  // One at a time (total: 1), round robin: a was served last (the holding turn), so b's first, then a's.
  expect(texts).toEqual(['answer 2', 'answer 3', 'answer 4', 'answer 1'])
})

postgresOnly("round robin holds across engines: the other tenant's prompt starts next", async () => {
  const { hold, release, running } = holdTool()
  const options = { tools: { hold }, concurrency: { perTenant: 1, total: 1 }, controlPollIntervalMs: 50 }
  h = await createHarness(options)
  b = await createEngine({ database: h.dbPath, model: modelFor(h.server), ...options })
  const x = await h.engine.createSession({ tenant: 't1' })
  h.server.tool('hold', {})
  const holding = h.engine.prompt(x.id, 'hold')
  await running
  // t1's three prompts (two queued on A, one on B), then t2's one on B.
  const queued = []
  for (const [engine, tenant] of [[h.engine, 't1'], [h.engine, 't1'], [b, 't1'], [b, 't2']] as const) {
    const session = await engine.createSession({ tenant })
    const q = engine.prompt(session.id, 'go', { whenBusy: 'enqueue' })
    await q.stored
    queued.push(q)
  }
  const texts = await answeredInOrder(holding, release, queued)
  expect(texts.slice().sort()).toEqual(['answer 1', 'answer 2', 'answer 3', 'answer 4'])
  // t1 was served last (the holding turn, on A), so t2's prompt starts first, whichever engine takes it.
  expect(texts[3]).toBe('answer 1')
})
