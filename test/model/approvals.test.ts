/**
 * Approval cases the edge walks of transitions.test.ts do not take. A doom loop under policy `ask` takes the same edge as a tool with `needsApproval`
 * (`streaming --step.finished [needsApproval]--> awaiting-approval`), on an engine configured
 * with `doomLoop: { policy: 'ask' }`; the walks of transitions.test.ts use the default `stop`.
 */
import { startRig, turnInvariantViolations, type Rig } from './support/rig'

let rig: Rig | undefined
afterEach(async () => {
  await rig?.close()
  rig = undefined
})

test('doom loop, policy ask: the looping calls wait for approval; approved, they run and the turn goes on', async () => {
  rig = await startRig({ doomLoop: { policy: 'ask' } })
  const calls = [0, 1, 2].map((k) => ({ tool: { name: 'work', input: { n: 7 }, id: `call_loop_${k}` } }))
  rig.server.push({ type: 'stream', chunks: calls }, { type: 'stream', chunks: [{ text: 'done' }] })
  const session = await rig.engine.createSession()
  const turn = rig.engine.prompt(session.id, 'loop')
  const requested = await rig.waitFor((e) => e.type === 'approval.requested' && e.turnId === turn.id)
  expect(requested.type === 'approval.requested' && requested.calls.map((c) => c.callId)).toEqual(['call_loop_0', 'call_loop_1', 'call_loop_2'])
  await rig.engine.approve(turn.id, 'call_loop_0')
  await rig.engine.deny(turn.id, 'call_loop_1', 'enough')
  await rig.engine.approve(turn.id, 'call_loop_2')
  const result = await turn.done
  expect(result.outcome).toBe('completed')
  const rows = await rig.engine.transitions(turn.id)
  expect(rows.map((r) => `${r.from} --${r.event}--> ${r.to}`)).toEqual([
    'idle --turn.start--> step-gate',
    'step-gate --gate.continue--> streaming',
    'streaming --step.finished--> awaiting-approval',
    'awaiting-approval --tool.approved--> awaiting-approval',
    'awaiting-approval --tool.denied--> awaiting-approval',
    'awaiting-approval --tool.approved--> tool-running',
    'tool-running --gate.continue--> streaming',
    'streaming --step.finished--> completed',
  ])
  expect(rows[2].payload).toMatchObject({ approvals: ['call_loop_0', 'call_loop_1', 'call_loop_2'] })
  expect(rows[2].payload.doomLoop).toBeUndefined()
  const messages = await rig.engine.messages(session.id)
  const tools = messages.flatMap((m) => m.parts).filter((p) => p.type === 'tool')
  expect(tools.map((p) => p.type === 'tool' && p.state.status)).toEqual(['completed', 'error', 'completed'])
  expect(rig.toolCalls).toBe(2)
  expect(JSON.stringify(rig.server.requests[1].body)).toContain('the user denied this tool call: enough')
  expect(await turnInvariantViolations(rig.engine, session.id, turn.id)).toEqual([])
})

test('a storage failure on the row of an approval while another call waits: the turn fails, no tool runs', async () => {
  rig = await startRig()
  const calls = [1, 2].map((k) => ({ tool: { name: 'work', input: { n: k, ask: true }, id: `call_ask_${k}` } }))
  rig.server.push({ type: 'stream', chunks: calls })
  const session = await rig.engine.createSession()
  const turn = rig.engine.prompt(session.id, 'ask twice')
  rig.failTransitionWrite(turn.id, 4) // awaiting-approval --tool.approved--> awaiting-approval
  await rig.waitFor((e) => e.type === 'approval.requested' && e.turnId === turn.id)
  await rig.engine.approve(turn.id, 'call_ask_1')
  const result = await turn.done
  expect(result).toMatchObject({ outcome: 'failed', error: { name: 'StorageError' } })
  const rows = await rig.engine.transitions(turn.id)
  expect(rows.map((r) => `${r.seq} ${r.from} --${r.event}--> ${r.to}`)).toEqual([
    '1 idle --turn.start--> step-gate',
    '2 step-gate --gate.continue--> streaming',
    '3 streaming --step.finished--> awaiting-approval',
    '4 awaiting-approval --turn.fail--> failed',
  ])
  const messages = await rig.engine.messages(session.id)
  const tools = messages.flatMap((m) => m.parts).filter((p) => p.type === 'tool')
  for (const part of tools) {
    expect(part.type === 'tool' && part.state).toMatchObject({ status: 'error', error: 'Tool not run: the turn failed (StorageError)', metadata: { interrupted: true } })
  }
  expect(tools).toHaveLength(2)
  expect(rig.toolCalls).toBe(0)
  expect(await turnInvariantViolations(rig.engine, session.id, turn.id)).toEqual([])
})
