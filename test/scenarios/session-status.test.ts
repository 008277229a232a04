/**
 * A session's status reads the same from this engine's memory (`engine.status`, what the turn
 * announced) and from the store (`engine.readStatus`, what another engine, the chat handler's
 * resume and the CLI see): one derivation from the turn's row and the chart. Each wait the chart
 * has a status for is entered for real and read both ways.
 */
import { tool } from 'ai'
import { z } from 'zod'
import type { SessionStatus } from '../../src'
import { createHarness, type Harness } from '../support/harness'

let h: Harness
afterEach(() => h?.close())

/** Both readings once the turn has entered `state`: the live one and the stored one. */
async function bothReadings(state: string): Promise<{ live: SessionStatus; stored: SessionStatus }> {
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'x')
  await h.waitForEvent((e) => e.type === 'turn.transition' && e.turnId === turn.id && e.to === state)
  const readings = { live: h.engine.status(session.id), stored: await h.engine.readStatus(session.id) }
  turn.abort('read')
  await turn.done
  return readings
}

const deploy = tool({ description: 'Deploy', inputSchema: z.object({ to: z.string() }), needsApproval: true, execute: async ({ to }) => `deployed to ${to}` })
const overloaded = { error: { type: 'overloaded_error', message: 'Overloaded' } }
// A retry waits long enough to be read (the turn is aborted once it is).
const slowRetry = { retry: { initialDelayMs: 60_000, maxDelayMs: 60_000, jitter: 0 } }

test('a step waiting to retry: `retry`, its attempt, the error and the next attempt\'s time, read from memory and from the store alike', async () => {
  h = await createHarness(slowRetry)
  h.server.error(503, overloaded)
  const { live, stored } = await bothReadings('retry-waiting')
  expect(live).toMatchObject({ type: 'retry', attempt: 1, message: expect.stringContaining('Overloaded') })
  expect(stored).toEqual(live)
})

test('a summary waiting to retry (compaction-retry-waiting): `retry` from the store too, as from memory', async () => {
  h = await createHarness(slowRetry)
  h.server.error(400, { error: { code: 'context_length_exceeded', message: 'too long' } })
  h.server.error(503, overloaded)
  const { live, stored } = await bothReadings('compaction-retry-waiting')
  expect(live).toMatchObject({ type: 'retry', attempt: 1, message: expect.stringContaining('Overloaded') })
  expect(stored).toEqual(live)
})

test('a turn waiting for an approval: busy, with the call to decide on, both ways', async () => {
  h = await createHarness({ tools: { deploy } })
  h.server.tool('deploy', { to: 'prod' }, { id: 'call_deploy' })
  const { live, stored } = await bothReadings('awaiting-approval')
  expect(live).toMatchObject({ type: 'busy', state: 'awaiting-approval', approvals: [{ callId: 'call_deploy', tool: 'deploy', input: { to: 'prod' } }] })
  expect(stored).toEqual(live)
})

test('a streaming turn: busy in `streaming`, both ways', async () => {
  h = await createHarness()
  h.server.push({ type: 'stream', chunks: [{ text: 'half' }], end: 'hang' })
  const { live, stored } = await bothReadings('streaming')
  expect(live).toMatchObject({ type: 'busy', state: 'streaming' })
  expect(stored).toEqual(live)
})
