/**
 * Tools done right: approval as a persisted state, doom-loop detection, outputs that are too
 * big or not JSON, per-tool timeouts, bounded parallelism.
 */
import { tool } from 'ai'
import { z } from 'zod'
import { configureTool, createEngine, turnStateName, type ToolPart } from '../../src'
import { createHarness, assistantParts, modelFor, type Harness } from '../support/harness'

let h: Harness
afterEach(async () => {
  await h?.close()
})

const runs: string[] = []
const deploy = tool({
  description: 'Deploy',
  inputSchema: z.object({ env: z.string() }),
  needsApproval: ({ env }) => env === 'prod',
  execute: async ({ env }) => {
    runs.push(env)
    return `deployed to ${env}`
  },
})
const read = tool({ description: 'Read', inputSchema: z.object({ path: z.string() }), execute: async ({ path }) => `contents of ${path}` })

beforeEach(() => {
  runs.length = 0
})

async function toolParts(h: Harness, sessionId: string) {
  return (await assistantParts(h.engine, sessionId)).filter((p): p is ToolPart => p.type === 'tool')
}

test('a call that needs approval waits in awaiting-approval, persisted, until approved', async () => {
  h = await createHarness({ tools: { deploy } })
  h.server.tool('deploy', { env: 'prod' })
  h.server.text('deployed')
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'ship it')
  const requested = await h.waitForEvent((e) => e.type === 'approval.requested')
  const callId = (requested as { calls: Array<{ callId: string }> }).calls[0].callId
  expect(requested).toMatchObject({ turnId: turn.id, calls: [{ tool: 'deploy', input: { env: 'prod' } }] })
  // the status in memory lists what the turn waits on, as the one read from the database does
  const waiting = { type: 'busy', state: 'awaiting-approval', approvals: [{ callId, tool: 'deploy', input: { env: 'prod' } }] }
  expect(h.engine.status(session.id)).toMatchObject(waiting)
  expect(await h.engine.readStatus(session.id)).toMatchObject(waiting)
  expect(await h.engine.getTurn(turn.id)).toMatchObject({ state: 'awaiting-approval' })
  expect((await toolParts(h, session.id))[0].state).toMatchObject({ status: 'pending', approval: 'required', input: { env: 'prod' } })
  expect(runs).toEqual([])
  await h.engine.approve(turn.id, callId)
  expect((await turn.done).outcome).toBe('completed')
  expect(runs).toEqual(['prod'])
  expect((await toolParts(h, session.id))[0].state).toMatchObject({ status: 'completed', output: 'deployed to prod' })
  expect((await h.engine.transitions(turn.id)).map((t) => t.to)).toEqual(['step-gate', 'streaming', 'awaiting-approval', 'tool-running', 'streaming', 'completed'])
})

test('needsApproval as a function of the input: a call it lets through runs at once', async () => {
  h = await createHarness({ tools: { deploy } })
  h.server.tool('deploy', { env: 'staging' })
  h.server.text('ok')
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'ship it')
  expect((await turn.done).outcome).toBe('completed')
  expect(runs).toEqual(['staging'])
})

test('a denied call becomes an error carrying the reason, and the model sees it', async () => {
  h = await createHarness({ tools: { deploy } })
  h.server.tool('deploy', { env: 'prod' })
  h.server.text('understood')
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'ship it')
  const requested = (await h.waitForEvent((e) => e.type === 'approval.requested')) as { calls: Array<{ callId: string }> }
  await h.engine.deny(turn.id, requested.calls[0].callId, 'not on a Friday')
  expect((await turn.done).outcome).toBe('completed')
  expect(runs).toEqual([])
  expect((await toolParts(h, session.id))[0].state).toMatchObject({ status: 'error', error: 'the user denied this tool call: not on a Friday' })
  expect(h.server.requests[1].body.messages.find((m: { role: string }) => m.role === 'tool').content).toBe('the user denied this tool call: not on a Friday')
})

test('with two calls pending the turn waits for both decisions', async () => {
  h = await createHarness({ tools: { deploy } })
  h.server.tools([{ name: 'deploy', input: { env: 'prod' } }, { name: 'deploy', input: { env: 'prod' } }])
  h.server.text('done')
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'twice')
  const requested = (await h.waitForEvent((e) => e.type === 'approval.requested')) as { calls: Array<{ callId: string }> }
  expect(requested.calls).toHaveLength(2)
  await h.engine.approve(turn.id, requested.calls[0].callId)
  expect(turnStateName(turn.actor.getSnapshot())).toBe('awaiting-approval')
  await h.engine.deny(turn.id, requested.calls[1].callId)
  expect((await turn.done).outcome).toBe('completed')
  expect(runs).toEqual(['prod'])
  const log = await h.engine.transitions(turn.id)
  expect(log.map((t) => `${t.from}>${t.event}>${t.to}`)).toContain('awaiting-approval>tool.approved>awaiting-approval')
  expect((await h.engine.replay(turn.id)).map((s) => s.state)).toEqual(log.map((t) => t.to))
})

test('approving a call that is not pending fails with ApprovalNotPendingError', async () => {
  h = await createHarness({ tools: { deploy } })
  h.server.tool('deploy', { env: 'prod' })
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'ship it')
  await h.waitForEvent((e) => e.type === 'approval.requested')
  await expect(h.engine.approve(turn.id, 'call_nope')).rejects.toMatchObject({ name: 'ApprovalNotPendingError', callId: 'call_nope' })
  await expect(h.engine.approve('trn_unknown', 'call_1')).rejects.toMatchObject({ name: 'ApprovalNotPendingError' })
  turn.abort()
  expect((await turn.done).outcome).toBe('aborted')
  const [part] = await toolParts(h, session.id)
  expect(part.state).toMatchObject({ status: 'error', error: 'Tool execution aborted' })
})

test('a pending approval survives the engine: a new engine on the same file approves it and the turn resumes', async () => {
  h = await createHarness({ tools: { deploy } })
  h.server.tool('deploy', { env: 'prod' })
  h.server.text('deployed after restart')
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'ship it')
  const requested = (await h.waitForEvent((e) => e.type === 'approval.requested')) as { calls: Array<{ callId: string }> }
  await h.engine.close()
  await expect(turn.done).rejects.toMatchObject({ name: 'TurnParkedError' })
  const reader = await createEngine({ database: h.dbPath, model: modelFor(h.server), tools: { deploy }, recovery: { onOpen: false } })
  expect(await reader.getTurn(turn.id)).toMatchObject({ state: 'awaiting-approval', outcome: null, owner: 'turnchart:parked' })
  await reader.close()
  const next = await createEngine({ database: h.dbPath, model: modelFor(h.server), tools: { deploy } })
  try {
    // Parked by close(): not resumed at open, taken by the approve.
    expect(next.activeTurn(session.id)).toBeUndefined()
    expect(await next.readStatus(session.id)).toMatchObject({ type: 'busy', state: 'awaiting-approval' })
    const completed = new Promise<void>((resolve) => next.subscribe((event) => event.type === 'turn.transition' && event.turnId === turn.id && event.to === 'completed' && resolve()))
    await next.approve(turn.id, requested.calls[0].callId)
    await completed
    expect(await next.getTurn(turn.id)).toMatchObject({ outcome: 'completed' })
    expect(runs).toEqual(['prod'])
    const log = await next.transitions(turn.id)
    expect(log.map((t) => t.to)).toEqual(['step-gate', 'streaming', 'awaiting-approval', 'tool-running', 'streaming', 'completed'])
  } finally {
    await next.close()
  }
})

test('doom loop: the same call three times in a row stops the turn with DoomLoopError', async () => {
  h = await createHarness({ tools: { read } })
  for (let i = 0; i < 3; i++) h.server.tool('read', { path: 'same.txt' })
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'x')
  const result = await turn.done
  expect(result.outcome).toBe('failed')
  expect(result.error).toMatchObject({ name: 'DoomLoopError', kind: 'repeat', tool: 'read', input: { path: 'same.txt' } })
  expect(result.error?.message).toMatch(/'read' was called 3 times in a row/)
  const parts = await toolParts(h, session.id)
  expect(parts.map((p) => p.state.status)).toEqual(['completed', 'completed', 'error'])
  expect(parts[2].state).toMatchObject({ error: 'Tool not run: the turn failed (DoomLoopError)' })
})

test('doom loop: an A,B,A,B cycle across steps is caught', async () => {
  h = await createHarness({ tools: { read } })
  for (const path of ['a', 'b', 'a', 'b']) h.server.tool('read', { path })
  const session = await h.engine.createSession()
  const result = await h.engine.prompt(session.id, 'x').done
  expect(result.error).toMatchObject({ name: 'DoomLoopError', kind: 'cycle', calls: [{ tool: 'read', input: { path: 'a' } }, { tool: 'read', input: { path: 'b' } }] })
  expect(h.server.calls).toBe(4)
})

test('doom loop with policy ask: the looping call waits for approval', async () => {
  h = await createHarness({ tools: { read }, doomLoop: { policy: 'ask', repeats: 2 } })
  h.server.tool('read', { path: 'x' })
  h.server.tool('read', { path: 'x' })
  h.server.text('stopped looping')
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'x')
  const requested = (await h.waitForEvent((e) => e.type === 'approval.requested')) as { calls: Array<{ callId: string }> }
  await h.engine.approve(turn.id, requested.calls[0].callId)
  expect((await turn.done).outcome).toBe('completed')
})

test('a huge output is truncated, saying so; an output JSON cannot hold is stored as text', async () => {
  const big = tool({ description: 'Big', inputSchema: z.object({}), execute: async () => 'y'.repeat(10_000) })
  const odd = tool({ description: 'Odd', inputSchema: z.object({}), execute: async () => ({ n: BigInt(1) }) as unknown as string })
  h = await createHarness({ tools: { big, odd }, toolExecution: { maxOutputBytes: 1000 } })
  h.server.tools([{ name: 'big', input: {} }, { name: 'odd', input: {} }])
  h.server.text('ok')
  const session = await h.engine.createSession()
  expect((await h.engine.prompt(session.id, 'x').done).outcome).toBe('completed')
  const [first, second] = await toolParts(h, session.id)
  const output = (first.state as { output: string }).output
  expect(Buffer.byteLength(output)).toBeLessThanOrEqual(1000)
  expect(output).toMatch(/\[output truncated: 10000 bytes, limit 1000\]$/)
  expect(second.state).toMatchObject({ status: 'completed', output: expect.stringMatching(/^\[output not JSON-serialisable/) })
})

test('a tool\'s own timeout overrides toolExecution.timeoutMs', async () => {
  const slow = configureTool(
    tool({ description: 'Slow', inputSchema: z.object({}), execute: () => new Promise<string>((resolve) => setTimeout(() => resolve('late'), 2000)) }),
    { timeoutMs: 30 },
  )
  h = await createHarness({ tools: { slow }, toolExecution: { timeoutMs: 60_000 } })
  h.server.tool('slow', {})
  h.server.text('ok')
  const session = await h.engine.createSession()
  expect((await h.engine.prompt(session.id, 'x').done).outcome).toBe('completed')
  expect((await toolParts(h, session.id))[0].state).toMatchObject({ status: 'error', error: "tool 'slow' timed out after 30 ms" })
})

test('8 parallel calls with concurrency 2: never more than 2 at once, results in call order', async () => {
  let running = 0
  let peak = 0
  const wait = tool({
    description: 'Wait',
    inputSchema: z.object({ n: z.number() }),
    execute: async ({ n }) => {
      running++
      peak = Math.max(peak, running)
      await new Promise((resolve) => setTimeout(resolve, (8 - n) * 3))
      running--
      return `r${n}`
    },
  })
  h = await createHarness({ tools: { wait }, toolExecution: { concurrency: 2 } })
  h.server.tools(Array.from({ length: 8 }, (_, n) => ({ name: 'wait', input: { n } })))
  h.server.text('ok')
  const session = await h.engine.createSession()
  expect((await h.engine.prompt(session.id, 'x').done).outcome).toBe('completed')
  expect(peak).toBe(2)
  const results = h.server.requests[1].body.messages.filter((m: { role: string }) => m.role === 'tool').map((m: { content: string }) => m.content)
  expect(results).toEqual(['r0', 'r1', 'r2', 'r3', 'r4', 'r5', 'r6', 'r7'])
})
