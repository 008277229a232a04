/**
 * Run trees across engines (PostgreSQL): a child turn may run on another engine than its
 * parent. Engine B takes the child over (its lease ran out on A); the parent, still on A,
 * follows the child's row, an approval asked from A reaches the child on B, and the parent
 * completes with the child's text. An abort of the parent on A reaches a child on B. A tree
 * split over A and B stops at one budget (its spending kept in the store).
 */
import { spawnSync } from 'node:child_process'
import os from 'node:os'
import { tool } from 'ai'
import { Client } from 'pg'
import { z } from 'zod'
import { agentTool, createEngine, type Engine, type EngineOptions, type ToolPart, type WaitingCallEntry } from '../../src'
import { createHarness, modelFor, pgBaseUrl, postgresOnly, type Harness } from '../support/harness'

let h: Harness
let b: Engine | undefined
afterEach(async () => {
  await b?.close()
  b = undefined
  await h?.close()
})

const tools = {
  ops: agentTool({ description: 'The ops agent', inputSchema: z.object({ task: z.string() }), tools: ['deploy'], toPrompt: ({ task }) => task }),
  deploy: tool({ description: 'Deploy', inputSchema: z.object({ env: z.string() }), needsApproval: true, execute: async ({ env }) => `deployed to ${env}` }),
}

/**
 * As if a third engine of this host had taken the child over from A and died since: A's
 * renewals no longer match (A stops the child at its next one and its parent follows the row),
 * the lease has not run out (so A does not recover it itself), and B may take it over (its
 * owner's process is gone). Resolves once B runs it and A has heard it lost it.
 */
async function moveToB(childId: string): Promise<void> {
  const schema = new URL(h.dbPath).searchParams.get('schema')!
  const client = new Client({ connectionString: pgBaseUrl })
  await client.connect()
  try {
    const gone = `${os.hostname()}:${spawnSync(process.execPath, ['-e', '0']).pid}:gone`
    await client.query(`update "${schema}".turnchart_turns set owner = $2, lease_until = $3 where id = $1`, [childId, gone, Date.now() + 600_000])
  } finally {
    await client.end()
  }
  const taken = await b!.recover()
  expect(taken.map((t) => t.id)).toEqual([childId])
  // A hears at its next lease renewal that the child is B's now.
  await h.waitForEvent((e) => e.type === 'turn.lost' && e.turnId === childId)
}

/** A's tree waits on its child's approval; then B takes the child over (its owner made a process that is gone). */
async function childMovedToB(extra: Partial<EngineOptions> = {}) {
  h = await createHarness({ tools, leaseMs: 1500, controlPollIntervalMs: 50, recovery: { onOpen: false, intervalMs: 0 }, ...extra })
  h.server.tool('ops', { task: 'deploy to prod' }, { id: 'call_ops' })
  h.server.tool('deploy', { env: 'prod' }, { id: 'call_deploy' })
  const session = await h.engine.createSession()
  const parent = h.engine.prompt(session.id, 'ship it')
  await h.waitForEvent((e) => e.type === 'approval.requested')
  const [child] = await h.engine.childTurns(parent.id)
  b = await createEngine({ database: h.dbPath, model: modelFor(h.server), tools, leaseMs: 1500, controlPollIntervalMs: 50, recovery: { onOpen: false, intervalMs: 0 }, ...extra })
  await moveToB(child.id)
  return { session, parent, child }
}

postgresOnly("a child run by another engine: the parent follows its row, an approval from the parent's engine reaches it, the parent completes", async () => {
  const { session, parent, child } = await childMovedToB()
  h.server.text('Deployed.')
  h.server.text('The ops agent deployed.')
  const status = await h.engine.readStatus(session.id)
  expect(status).toMatchObject({ type: 'busy', turnId: parent.id, state: 'tool-running', approvals: [{ callId: 'call_deploy', turnId: child.id }] })
  await h.engine.approve(child.id, 'call_deploy')
  const result = await parent.done
  expect(result).toMatchObject({ outcome: 'completed', text: 'The ops agent deployed.' })
  expect(await h.engine.childTurns(parent.id)).toEqual([expect.objectContaining({ id: child.id, outcome: 'completed' })])
  const call = (await h.engine.messages(session.id)).flatMap((m) => m.parts).find((p): p is ToolPart => p.type === 'tool')!
  expect(call.state).toMatchObject({ status: 'completed', output: 'Deployed.' })
})

postgresOnly('aborting the parent aborts its child on another engine', async () => {
  const { parent, child } = await childMovedToB()
  const abortedOnB = new Promise<void>((resolve) => b!.subscribe((e) => e.type === 'turn.transition' && e.turnId === child.id && e.to === 'aborted' && resolve()))
  parent.abort()
  expect((await parent.done).outcome).toBe('aborted')
  await abortedOnB
  expect(await h.engine.getTurn(child.id)).toMatchObject({ outcome: 'aborted', error: { name: 'MessageAbortedError' } })
})

postgresOnly('a tree split over two engines stops at one budget: the parent on A counts the step its child made on B', async () => {
  // Three model calls: the parent's first (A), the child's first (A), the child's second (B).
  const { parent, child } = await childMovedToB({ budget: { steps: 3 } })
  h.server.text('Deployed.')
  h.server.text('never sent: the budget is spent')
  await b!.approve(child.id, 'call_deploy')
  const result = await parent.done
  expect(result).toMatchObject({ outcome: 'failed', error: { name: 'BudgetExceededError', limit: 'steps', max: 3, reached: 3 } })
  expect(h.server.calls).toBe(3)
  expect(await h.engine.getTurn(child.id)).toMatchObject({ outcome: 'completed' })
})

postgresOnly('two children of one tree on two engines stepping at the same moment make no more model calls than the budget', async () => {
  const working = {
    ops: agentTool({ description: 'The ops agent', inputSchema: z.object({ task: z.string() }), tools: ['deploy', 'work'], toPrompt: ({ task }) => task }),
    deploy: tools.deploy,
    work: tool({ description: 'Work', inputSchema: z.object({ n: z.number() }), execute: async () => 'ok' }),
  }
  const options = { tools: working, leaseMs: 1500, controlPollIntervalMs: 50, recovery: { onOpen: false, intervalMs: 0 }, budget: { steps: 8 } }
  h = await createHarness(options)
  b = await createEngine({ database: h.dbPath, model: modelFor(h.server), ...options })
  // The parent starts two children at once; each asks to deploy and waits for approval.
  h.server.tools([{ name: 'ops', input: { task: 'one' } }, { name: 'ops', input: { task: 'two' } }])
  h.server.tool('deploy', { env: 'prod' }).tool('deploy', { env: 'staging' })
  const session = await h.engine.createSession()
  const parent = h.engine.prompt(session.id, 'ship it')
  await h.waitForEvent((e) => e.type === 'approval.requested' && h.events.filter((x) => x.type === 'approval.requested').length === 2)
  const approvals = (await h.engine.waiting({ sessionId: undefined })).filter((entry): entry is WaitingCallEntry => entry.kind === 'approval')
  expect(approvals).toHaveLength(2)
  await moveToB(approvals[1].turnId)
  // Then both work, step after step, one on A and one on B, until the tree's budget is spent.
  for (let n = 0; n < 12; n++) h.server.tool('work', { n }) // (each input its own: no doom loop)
  await Promise.all([h.engine.approve(approvals[0].turnId, approvals[0].callId), b.approve(approvals[1].turnId, approvals[1].callId)])
  expect(await parent.done).toMatchObject({ outcome: 'failed', error: { name: 'BudgetExceededError', limit: 'steps', max: 8 } })
  for (const { turnId } of approvals) await expect(b.getTurn(turnId)).resolves.toMatchObject({ outcome: 'failed', error: { name: 'BudgetExceededError' } })
  // Parent 1, the children's first calls 2, then their work steps: 8 in all, never 9.
  expect(h.server.calls).toBe(8)
})
