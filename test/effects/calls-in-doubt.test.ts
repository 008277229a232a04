/**
 * Calls in doubt and deferred calls on a real engine (the scripted server over HTTP, a SQLite
 * file): a tool that throws `CallOutcomeUnknownError` is asked its `reconcile`, then waits in
 * `call-in-doubt` for `resolveCall`; a tool that returns `defer()` waits in `awaiting-deferred`;
 * the model is not called meanwhile; each resolution leads to its documented end.
 */
import { tool } from 'ai'
import { z } from 'zod'
import { CallNotWaitingError, CallOutcomeUnknownError, callInfo, configureTool, defer, type ToolPart } from '../../src'
import { assistantParts, createHarness, type Harness } from '../support/harness'
import { turnActivity } from '../../src/viewer/page/turn-activity'
import { stateFields } from '../../src/viewer/page-views'
import { pollTurnStream } from '../../src/ui/poll-turn'

let h: Harness
afterEach(async () => {
  await h?.close()
})

const executions: Array<{ key: string; attempt: number }> = []
beforeEach(() => {
  executions.length = 0
})

/** A payment tool whose connection drops on its first execution: the charge may or may not have happened. */
const charge = (reconcile?: Parameters<typeof configureTool>[1]['reconcile']) =>
  configureTool(
    tool({
      description: 'Charge a card',
      inputSchema: z.object({ cents: z.number() }),
      execute: async ({ cents }, options) => {
        const { callId, idempotencyKey, attempt } = callInfo(options)
        // (the key is also a field of the options, and made once per execution: read twice, the same)
        expect((options as unknown as { idempotencyKey: string }).idempotencyKey).toBe(idempotencyKey)
        executions.push({ key: idempotencyKey, attempt })
        if (attempt === 1) throw new CallOutcomeUnknownError({ callId, toolName: 'charge', cause: new Error('socket hang up') })
        return { charged: cents }
      },
    }),
    reconcile ? { reconcile } : {},
  )

async function toolPart(sessionId: string): Promise<ToolPart> {
  return (await assistantParts(h.engine, sessionId)).find((p): p is ToolPart => p.type === 'tool')!
}

test('an unknown outcome without reconcile is in doubt: the turn waits, the model is not called; output resolves it', async () => {
  h = await createHarness({ tools: { charge: charge() } })
  h.server.tool('charge', { cents: 500 })
  h.server.text('charged')
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'pay')
  const waiting = await h.waitForEvent((e) => e.type === 'calls.waiting')
  expect(waiting).toMatchObject({ turnId: turn.id, calls: [{ tool: 'charge', status: 'in-doubt', input: { cents: 500 } }] })
  expect(await h.engine.getTurn(turn.id)).toMatchObject({ state: 'call-in-doubt', outcome: null })
  expect(h.engine.status(session.id)).toMatchObject({ type: 'busy', state: 'call-in-doubt', calls: [{ status: 'in-doubt' }] })
  expect((await toolPart(session.id)).state).toMatchObject({ status: 'in-doubt', execution: 1, reason: expect.stringContaining('socket hang up') })
  expect(h.server.requests).toHaveLength(1)
  // the viewer shows the turn as waiting; the turn's own stream says which call waits and why
  const record = (await h.engine.getTurn(turn.id))!
  expect(turnActivity({ ...record, ...stateFields(record.state) }, Date.now())).toBe('waiting')
  const told: unknown[] = []
  turn.subscribe((e) => e.type === 'calls.waiting' && told.push(e), { replay: true })
  expect(told).toMatchObject([{ calls: [{ status: 'in-doubt' }] }])
  // a page that follows the turn from its rows (another engine's, say) is told the turn stops at the wait
  const polled: Array<{ type: string; finishReason?: string }> = []
  for await (const chunk of pollTurnStream(h.engine, { id: turn.id, sessionId: session.id }, { intervalMs: 20 }) as unknown as AsyncIterable<{ type: string }>) polled.push(chunk)
  expect(polled.at(-1)).toMatchObject({ type: 'finish', finishReason: 'tool-calls' })
  const { callId } = (waiting as { calls: Array<{ callId: string }> }).calls[0]
  await h.engine.resolveCall(turn.id, callId, { output: { charged: 500, note: 'seen in the ledger' } })
  expect((await turn.done).outcome).toBe('completed')
  expect(executions).toHaveLength(1)
  expect((await toolPart(session.id)).state).toMatchObject({ status: 'completed', output: { charged: 500, note: 'seen in the ledger' } })
  expect((await h.engine.transitions(turn.id)).map((t) => t.to)).toEqual(['step-gate', 'streaming', 'tool-running', 'call-in-doubt', 'tool-running', 'streaming', 'completed'])
  await expect(h.engine.resolveCall(turn.id, callId, { output: 1 })).rejects.toBeInstanceOf(CallNotWaitingError)
})

test('resolveCall retry runs the call once more with the same idempotency key; error is what the model sees', async () => {
  h = await createHarness({ tools: { charge: charge() } })
  h.server.tool('charge', { cents: 1 })
  h.server.text('ok')
  h.server.tool('charge', { cents: 2 })
  h.server.text('sorry')
  const session = await h.engine.createSession()
  const first = h.engine.prompt(session.id, 'pay 1')
  const w1 = (await h.waitForEvent((e) => e.type === 'calls.waiting' && e.turnId === first.id)) as { calls: Array<{ callId: string }> }
  await h.engine.resolveCall(first.id, w1.calls[0].callId, { retry: true })
  expect((await first.done).outcome).toBe('completed')
  expect(executions).toEqual([
    { key: expect.stringMatching(/^idk_/), attempt: 1 },
    { key: executions[0].key, attempt: 2 },
  ])
  expect((await toolPart(session.id)).state).toMatchObject({ status: 'completed', output: { charged: 1 } })

  executions.length = 0
  const second = h.engine.prompt(session.id, 'pay 2')
  const w2 = (await h.waitForEvent((e) => e.type === 'calls.waiting' && e.turnId === second.id)) as { calls: Array<{ callId: string }> }
  await h.engine.resolveCall(second.id, w2.calls[0].callId, { error: 'the charge was refused by the bank' })
  expect((await second.done).outcome).toBe('completed')
  expect(executions).toHaveLength(1)
  const toolMessage = h.server.requests.at(-1)!.body.messages.find((m: { role: string; content: string }) => m.role === 'tool' && m.content.includes('refused'))
  expect(toolMessage.content).toBe('the charge was refused by the bank')
})

test('reconcile: done gives its output without a second execution; done: false runs once more with the same key', async () => {
  const asked: Array<{ input: unknown; key: string }> = []
  let verdict: { done: true; output: unknown } | { done: false } = { done: true, output: { charged: 7, reconciled: true } }
  h = await createHarness({
    tools: {
      charge: charge((input, info) => {
        asked.push({ input, key: info.idempotencyKey })
        return verdict
      }),
    },
  })
  h.server.tool('charge', { cents: 7 })
  h.server.text('done')
  const session = await h.engine.createSession()
  expect((await h.engine.prompt(session.id, 'pay').done).outcome).toBe('completed')
  expect(executions).toHaveLength(1)
  expect(asked).toEqual([{ input: { cents: 7 }, key: executions[0].key }])
  expect((await toolPart(session.id)).state).toMatchObject({ status: 'completed', output: { charged: 7, reconciled: true } })

  executions.length = 0
  verdict = { done: false }
  h.server.tool('charge', { cents: 8 })
  h.server.text('done')
  expect((await h.engine.prompt(session.id, 'pay again').done).outcome).toBe('completed')
  expect(executions).toEqual([
    { key: expect.stringMatching(/^idk_/), attempt: 1 },
    { key: executions[0].key, attempt: 2 },
  ])
})

test('a deferred call waits in awaiting-deferred while its sibling completes; resolveCall output completes the turn', async () => {
  const report = tool({ description: 'Report', inputSchema: z.object({}), execute: async () => 'report ready' })
  const ci = tool({ description: 'Run CI', inputSchema: z.object({ ref: z.string() }), execute: async () => defer() })
  h = await createHarness({ tools: { ci, report } })
  h.server.tools([
    { name: 'ci', input: { ref: 'main' } },
    { name: 'report', input: {} },
  ])
  h.server.text('green')
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'run ci')
  const waiting = (await h.waitForEvent((e) => e.type === 'calls.waiting')) as { calls: Array<{ callId: string; status: string }> }
  expect(waiting.calls).toMatchObject([{ status: 'deferred' }])
  expect(await h.engine.getTurn(turn.id)).toMatchObject({ state: 'awaiting-deferred', retryAt: null })
  const parts = (await assistantParts(h.engine, session.id)).filter((p): p is ToolPart => p.type === 'tool')
  expect(parts.map((p) => [p.tool, p.state.status])).toEqual([
    ['ci', 'deferred'],
    ['report', 'completed'],
  ])
  expect(h.server.requests).toHaveLength(1)
  await h.engine.resolveCall(turn.id, waiting.calls[0].callId, { output: { status: 'passed' } })
  expect((await turn.done).outcome).toBe('completed')
  await expect(h.engine.resolveCall(turn.id, waiting.calls[0].callId, { retry: true })).rejects.toBeInstanceOf(CallNotWaitingError)
})

test('a deferred call whose stored deadline passes is an error the model sees', async () => {
  const ci = tool({ description: 'Run CI', inputSchema: z.object({}), execute: async () => defer({ timeoutMs: 50 }) })
  h = await createHarness({ tools: { ci } })
  h.server.tool('ci', {})
  h.server.text('it timed out')
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'run ci')
  await h.waitForEvent((e) => e.type === 'calls.waiting')
  const row = await h.engine.getTurn(turn.id)
  expect(row).toMatchObject({ state: 'awaiting-deferred' })
  expect(row!.retryAt).toBeGreaterThan(Date.now() - 1000)
  expect((await turn.done).outcome).toBe('completed')
  const part = await toolPart(session.id)
  expect(part.state).toMatchObject({ status: 'error', error: expect.stringContaining('did not arrive before its deadline') })
  expect(h.server.requests[1].body.messages.find((m: { role: string }) => m.role === 'tool').content).toContain('deadline')
})

test('a deferred call with onDeadline settles itself at its deadline: the model sees that output as the result', async () => {
  const ci = tool({ description: 'Run CI', inputSchema: z.object({}), execute: async () => defer({ timeoutMs: 50, onDeadline: { output: { status: 'no news: assume green' } } }) })
  h = await createHarness({ tools: { ci } })
  h.server.tool('ci', {})
  h.server.text('green, then')
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'run ci')
  await h.waitForEvent((e) => e.type === 'calls.waiting')
  expect((await toolPart(session.id)).state).toMatchObject({ status: 'deferred', onDeadline: { output: { status: 'no news: assume green' } } })
  expect((await turn.done).outcome).toBe('completed')
  expect((await toolPart(session.id)).state).toMatchObject({ status: 'completed', output: { status: 'no news: assume green' } })
  expect(h.server.requests[1].body.messages.find((m: { role: string }) => m.role === 'tool').content).toContain('assume green')
})

test('engine.wake brings such a deadline forward (days away, given as a time); a turn with nothing to wake is refused', async () => {
  const inAWeek = new Date(Date.now() + 7 * 24 * 3600_000)
  const ci = tool({ description: 'Check later', inputSchema: z.object({}), execute: async () => defer({ until: inAWeek, onDeadline: { output: 'checked again' } }) })
  h = await createHarness({ tools: { ci } })
  h.server.tool('ci', {})
  h.server.text('done')
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'check later')
  await h.waitForEvent((e) => e.type === 'calls.waiting')
  expect(await h.engine.getTurn(turn.id)).toMatchObject({ retryAt: inAWeek.getTime() })
  await h.engine.wake(turn.id)
  expect((await turn.done).outcome).toBe('completed')
  expect((await toolPart(session.id)).state).toMatchObject({ status: 'completed', output: 'checked again' })
  await expect(h.engine.wake(turn.id)).rejects.toMatchObject({ name: 'NothingToWakeError', turnId: turn.id, message: expect.stringContaining('ended (completed)') })
  await expect(h.engine.wake('trn_nope')).rejects.toMatchObject({ name: 'NothingToWakeError' })
})

test('defer refuses a deadline it cannot keep, naming the option', () => {
  expect(() => defer({ until: new Date('nope') })).toThrow(expect.objectContaining({ name: 'InvalidArgumentError', message: expect.stringContaining('until') }))
  expect(() => defer({ until: Date.now() + 1000, timeoutMs: 5 })).toThrow(/until or timeoutMs, not both/)
  expect(() => defer({ onDeadline: { output: 1 } })).toThrow(/onDeadline/)
  expect(() => defer({ timeoutMs: 5, onDeadline: 1 as never })).toThrow(/\{ output \}/)
})

test('a call in doubt parks its turn (parkAfterMs: 0); resolveCall takes it and the turn completes', async () => {
  h = await createHarness({ tools: { charge: charge() }, parkAfterMs: 0 })
  h.server.tool('charge', { cents: 9 })
  h.server.text('charged')
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'pay')
  const waiting = (await h.waitForEvent((e) => e.type === 'calls.waiting')) as { calls: Array<{ callId: string }> }
  await turn.done.catch(() => undefined) // parked: this handle lets go
  expect(await h.engine.getTurn(turn.id)).toMatchObject({ state: 'call-in-doubt', owner: 'turnchart:parked' })
  await h.engine.resolveCall(turn.id, waiting.calls[0].callId, { output: { charged: 9 } })
  await h.waitForEvent((e) => e.type === 'turn.transition' && e.turnId === turn.id && e.to === 'completed')
  expect((await toolPart(session.id)).state).toMatchObject({ status: 'completed', output: { charged: 9 } })
  expect(executions).toHaveLength(1)
})

test('a parked turn whose deferred call passes its stored deadline is taken at the deadline: the model sees the error', async () => {
  const ci = tool({ description: 'Run CI', inputSchema: z.object({}), execute: async () => defer({ timeoutMs: 30 }) })
  h = await createHarness({ tools: { ci }, parkAfterMs: 0 })
  h.server.tool('ci', {})
  h.server.text('timed out')
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'run ci')
  await turn.done.catch(() => undefined) // parked
  await h.waitForEvent((e) => e.type === 'turn.transition' && e.turnId === turn.id && e.to === 'completed')
  expect((await toolPart(session.id)).state).toMatchObject({ status: 'error', error: expect.stringContaining('deadline') })
})
