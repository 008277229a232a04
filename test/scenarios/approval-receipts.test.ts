/**
 * Approval receipts: each decision on a call that asked for approval is kept with the call (its
 * tool part) and in its turn's log: who decided, when, and the SHA-256 of the canonical JSON of
 * the input decided on. The tool runs only with an input of the approved digest. Receipts are
 * read per session and survive a fork and a revert. A real engine, on SQLite and PostgreSQL.
 */
import { createHash } from 'node:crypto'
import { tool } from 'ai'
import { z } from 'zod'
import { configureTool, createEngine, idempotent, type ToolPart } from '../../src'
import { openStore } from '../../src/engine/open-store'
import { assistantParts, createHarness, modelFor, type Harness } from '../support/harness'

let h: Harness
afterEach(async () => {
  await h?.close()
})

const runs: unknown[] = []
beforeEach(() => {
  runs.length = 0
})
const deploy = idempotent(
  tool({
    description: 'Deploy',
    inputSchema: z.object({ env: z.string(), region: z.string().optional() }),
    needsApproval: true,
    execute: async (input) => {
      runs.push(input)
      return `deployed to ${input.env}`
    },
  }),
)

/** The digest, computed here from a canonical JSON text written by hand (keys sorted). */
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex')

async function waitingCall(h: Harness): Promise<{ turnId: string; callId: string }> {
  const requested = (await h.waitForEvent((e) => e.type === 'approval.requested')) as { turnId: string; calls: Array<{ callId: string }> }
  return { turnId: requested.turnId, callId: requested.calls[0].callId }
}

const toolPart = async (h: Harness, sessionId: string) => (await assistantParts(h.engine, sessionId)).find((p): p is ToolPart => p.type === 'tool')!

test('an edited approval: the receipt records who, when and the digest of the input the tool ran with', async () => {
  h = await createHarness({ tools: { deploy }, editableApprovals: ['deploy'] })
  h.server.tool('deploy', { env: 'prod' })
  h.server.text('done')
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'ship it')
  const { callId } = await waitingCall(h)
  const before = Date.now()
  await h.engine.approve(turn.id, callId, { input: { region: 'eu', env: 'staging' }, by: 'ada@example.com' })
  expect((await turn.done).outcome).toBe('completed')
  expect(runs).toEqual([{ env: 'staging', region: 'eu' }])
  const part = await toolPart(h, session.id)
  const digest = sha256('{"env":"staging","region":"eu"}')
  expect(part.receipt).toEqual({ decision: 'approved', by: 'ada@example.com', at: expect.any(Number), inputDigest: digest, edited: true })
  expect(part.receipt!.at).toBeGreaterThanOrEqual(before)
  expect(part.state).toMatchObject({ status: 'completed', input: { env: 'staging', region: 'eu' }, modelInput: { env: 'prod' } })
  expect(await h.engine.approvalReceipts(session.id)).toEqual([{ ...part.receipt, turnId: turn.id, callId, tool: 'deploy' }])
})

test("a denial's receipt says who denied and why; the older deny(turnId, callId, reason) keeps working", async () => {
  h = await createHarness({ tools: { deploy } })
  h.server.tools([
    { name: 'deploy', input: { env: 'prod' }, id: 'call_a' },
    { name: 'deploy', input: { env: 'dev' }, id: 'call_b' },
  ])
  h.server.text('understood')
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'ship both')
  await waitingCall(h)
  await h.engine.deny(turn.id, 'call_a', { reason: 'not on a Friday', by: 'grace' })
  await h.engine.deny(turn.id, 'call_b', 'no')
  expect((await turn.done).outcome).toBe('completed')
  expect(runs).toEqual([])
  const receipts = await h.engine.approvalReceipts(session.id)
  expect(receipts).toEqual([
    { decision: 'denied', by: 'grace', reason: 'not on a Friday', at: expect.any(Number), inputDigest: sha256('{"env":"prod"}'), turnId: turn.id, callId: 'call_a', tool: 'deploy' },
    { decision: 'denied', reason: 'no', at: expect.any(Number), inputDigest: sha256('{"env":"dev"}'), turnId: turn.id, callId: 'call_b', tool: 'deploy' },
  ])
})

test('receipts survive a fork (the copy has them) and a revert (the next prompt deletes the messages, the log keeps them)', async () => {
  h = await createHarness({ tools: { deploy } })
  h.server.tool('deploy', { env: 'prod' })
  h.server.text('done')
  h.server.text('fresh start')
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'ship it')
  const { callId } = await waitingCall(h)
  await h.engine.approve(turn.id, callId, { by: 'ada' })
  await turn.done
  const [receipt] = await h.engine.approvalReceipts(session.id)
  expect(receipt).toMatchObject({ decision: 'approved', by: 'ada', callId, turnId: turn.id, inputDigest: sha256('{"env":"prod"}') })
  const messages = await h.engine.messages(session.id)
  const copy = await h.engine.fork(session.id, messages.at(-1)!.info.id)
  expect(await h.engine.approvalReceipts(copy.id)).toEqual([receipt])
  await h.engine.revert(session.id, messages[0].info.id)
  await h.engine.prompt(session.id, 'again').done
  expect((await assistantParts(h.engine, session.id)).some((p) => p.type === 'tool')).toBe(false) // the call's message is gone
  expect(await h.engine.approvalReceipts(session.id)).toEqual([receipt])
})

test('a stored input changed after its approval never runs: the call fails, the tool is not called', async () => {
  // Two calls of one step, one at a time: the approved deploy waits behind `hold` while the engine closes.
  let release!: () => void
  const held = new Promise<void>((resolve) => (release = resolve))
  let holding!: () => void
  const holdingNow = new Promise<void>((resolve) => (holding = resolve))
  const hold = idempotent(
    tool({
      description: 'Hold',
      inputSchema: z.object({}),
      execute: async () => {
        holding()
        await held
        return 'held'
      },
    }),
  )
  h = await createHarness({ tools: { hold, deploy }, toolExecution: { concurrency: 1 }, recovery: { onOpen: false, intervalMs: 0 } })
  h.server.tools([
    { name: 'hold', input: {}, id: 'call_hold' },
    { name: 'deploy', input: { env: 'staging' }, id: 'call_deploy' },
  ])
  h.server.text('done')
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'ship it')
  await waitingCall(h)
  await h.engine.approve(turn.id, 'call_deploy', { by: 'ada' })
  await holdingNow
  await h.engine.close() // the turn stays open in tool-running, deploy approved and not run
  release()
  await turn.done.catch(() => undefined)

  // The row is changed behind turnchart's back: the approved input is not what is stored any more.
  const opened = await openStore(h.dbPath)
  const messages = await opened.store.messages.list(session.id)
  const part = messages.flatMap((m) => m.parts).find((p): p is ToolPart => p.type === 'tool' && p.callId === 'call_deploy')!
  expect(part.state).toMatchObject({ status: 'running', input: { env: 'staging' } })
  part.state = { ...part.state, input: { env: 'prod' } }
  await opened.store.messages.upsertParts([part], Date.now())
  await opened.close()

  h.engine = await createEngine({ database: h.dbPath, model: modelFor(h.server), tools: { hold, deploy }, limits: { context: 100_000, output: 10_000 }, recovery: { onOpen: false, intervalMs: 0 } })
  const [resumed] = await h.engine.recover()
  const done = await resumed.done
  expect(done.outcome).toBe('completed')
  expect(runs).toEqual([]) // deploy never ran
  const after = (await assistantParts(h.engine, session.id)).find((p): p is ToolPart => p.type === 'tool' && p.callId === 'call_deploy')!
  expect(after.state).toMatchObject({ status: 'error', input: { env: 'prod' } })
  expect((after.state as { error: string }).error).toMatch(/input differs from the approved one/)
  expect(after.receipt).toMatchObject({ decision: 'approved', by: 'ada', inputDigest: sha256('{"env":"staging"}') })
})

test.each([
  ['held by its engine', {}],
  ['parked', { parkAfterMs: 0 }],
])('an approval that waits past approvalTimeoutMs expires (%s): the model sees a denial, the receipt says expired', async (_, parking) => {
  const slow = configureTool(
    tool({ description: 'Deploy', inputSchema: z.object({ env: z.string() }), needsApproval: true, execute: async ({ env }) => void runs.push(env) }),
    { approvalTimeoutMs: 20 },
  )
  h = await createHarness({ tools: { deploy: slow }, recovery: { intervalMs: 20 }, ...parking })
  h.server.tool('deploy', { env: 'prod' }, { id: 'call_late' })
  h.server.text('too late, then')
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'ship it')
  const ended = h.waitForEvent((e) => e.type === 'turn.transition' && e.turnId === turn.id && e.to === 'completed', 10_000)
  await ended
  // The waiting part as it was published: with its expiry.
  const waiting = h.events.flatMap((e) => (e.type === 'part.updated' && e.part.type === 'tool' && e.part.state.status === 'pending' ? [e.part.state] : []))
  const pending = waiting.find((state) => 'expiresAt' in state) as { expiresAt: number }
  expect(pending.expiresAt).toEqual(expect.any(Number))
  expect(runs).toEqual([])
  const part = await toolPart(h, session.id)
  expect(part.receipt).toEqual({ decision: 'expired', at: expect.any(Number), inputDigest: sha256('{"env":"prod"}') })
  expect(part.receipt!.at).toBeGreaterThanOrEqual(pending.expiresAt!)
  expect(part.state).toMatchObject({ status: 'error', metadata: { denied: true, expired: true } })
  const toolMessage = h.server.requests[1].body.messages.find((m: { role: string }) => m.role === 'tool')
  expect(toolMessage.content).toMatch(/^the user denied this tool call/)
  expect(await h.engine.approvalReceipts(session.id)).toEqual([{ ...part.receipt, turnId: turn.id, callId: 'call_late', tool: 'deploy' }])
})


test.each([
  ['held by its engine', {}],
  ['parked', { parkAfterMs: 0 }],
])('an approval deadline is settled on time at the default recovery interval (%s): approvalTimeoutMs 300 expires within 1.5 s', async (_, parking) => {
  const slow = configureTool(
    tool({ description: 'Deploy', inputSchema: z.object({ env: z.string() }), needsApproval: true, execute: async ({ env }) => void runs.push(env) }),
    { approvalTimeoutMs: 300 },
  )
  // (recovery.intervalMs left at its default, the lease's 30 s: the engine's deadline timer settles it)
  h = await createHarness({ tools: { deploy: slow }, ...parking })
  h.server.tool('deploy', { env: 'prod' }, { id: 'call_timed' })
  h.server.text('not approved in time')
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'ship it')
  const requested = await h.waitForEvent((e) => e.type === 'approval.requested' && e.turnId === turn.id)
  const expiresAt = (requested as { calls: Array<{ expiresAt?: number }> }).calls[0].expiresAt!
  expect(expiresAt).toBeGreaterThan(Date.now())
  await h.waitForEvent((e) => e.type === 'turn.transition' && e.turnId === turn.id && e.event === 'tool.denied', 5_000)
  expect(Date.now() - expiresAt).toBeLessThan(1_500)
  await h.waitForEvent((e) => e.type === 'turn.transition' && e.turnId === turn.id && e.to === 'completed', 5_000)
  expect((await toolPart(h, session.id)).receipt).toMatchObject({ decision: 'expired' })
  expect(runs).toEqual([])
})

test('after a restart, a parked approval is settled at its deadline by the new engine (one timer armed for the earliest stored deadline, at the default recovery interval)', async () => {
  const slow = () =>
    configureTool(tool({ description: 'Deploy', inputSchema: z.object({ env: z.string() }), needsApproval: true, execute: async ({ env }) => void runs.push(env) }), { approvalTimeoutMs: 1_000 })
  h = await createHarness({ tools: { deploy: slow() }, parkAfterMs: 0 })
  h.server.tool('deploy', { env: 'prod' }, { id: 'call_restart' })
  h.server.text('expired while we were away')
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'ship it')
  const requested = await h.waitForEvent((e) => e.type === 'approval.requested' && e.turnId === turn.id)
  const expiresAt = (requested as { calls: Array<{ expiresAt?: number }> }).calls[0].expiresAt!
  await turn.done.catch(() => undefined) // parked
  await h.engine.close()
  const next = await createEngine({ database: h.dbPath, model: modelFor(h.server), tools: { deploy: slow() }, limits: { context: 100_000, output: 10_000 } })
  try {
    await new Promise<void>((resolve) => next.subscribe((e) => e.type === 'turn.transition' && e.turnId === turn.id && e.to === 'completed' && resolve()))
    expect(Date.now() - expiresAt).toBeLessThan(1_500)
    const part = (await assistantParts(next, session.id)).find((p): p is ToolPart => p.type === 'tool' && p.callId === 'call_restart')!
    expect(part.receipt).toMatchObject({ decision: 'expired' })
    expect(runs).toEqual([])
  } finally {
    await next.close()
  }
})
