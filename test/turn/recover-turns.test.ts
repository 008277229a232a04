/**
 * Recovery through its ports (`RecoveryPorts`): a fake store holding one unfinished turn (its
 * row, its log, its messages) and a `resume` that records what it is handed. Asserts the rows
 * recovery writes and where the chart resumes, without a database or a running turn.
 */
import { tool, jsonSchema, type ToolSet } from 'ai'
import { transition } from 'xstate'
import { turnMachine, turnStateName } from '../../machines/turn.machine'
import type { TurnEvent, TurnInput } from '../../machines/turn.types'
import type { TurnchartEvent } from '../../src/core/bus'
import type { TurnUpdate } from '../../src/store/store'
import { idempotent } from '../../src/tools/tool-options'
import { recoverWith, type RecoveryPorts, type RecoveryStore, type ResumeRequest } from '../../src/turn/recovery/recover-turns'
import type { Store } from '../../src/store/store'
import type { MessageInfo, MessageWithParts, Part, TextPart, ToolPart, TransitionRecord, TurnRecord } from '../../src/core/types'

const input: TurnInput = { turnId: 'trn_1', sessionId: 'ses_1', autoCompact: true, maxCompactions: 1 }
const noop = () => tool({ description: 'x', inputSchema: jsonSchema<object>({ type: 'object' }) })
const tools: ToolSet = { read: idempotent(noop()), write: noop() }

const row = (seq: number, from: string, event: string, to: string, payload: Record<string, unknown> = {}): TransitionRecord => ({ turnId: 'trn_1', seq, from, event, to, payload, time: seq })
const failed429 = { error: { name: 'APIError', message: 'overloaded' }, overflow: false, retryDelayMs: 60_000 }
const logs = {
  streaming: [row(1, 'idle', 'turn.start', 'streaming')],
  'retry-waiting': [row(1, 'idle', 'turn.start', 'streaming'), row(2, 'streaming', 'step.failed', 'retry-waiting', failed429)],
  'tool-running': [row(1, 'idle', 'turn.start', 'streaming'), row(2, 'streaming', 'step.finished', 'tool-running', { finishReason: 'tool-calls', toolCalls: 2, overflow: false })],
  'awaiting-approval': [
    row(1, 'idle', 'turn.start', 'streaming'),
    row(2, 'streaming', 'step.finished', 'awaiting-approval', { finishReason: 'tool-calls', toolCalls: 1, overflow: false, approvals: ['c1'] }),
  ],
  idle: [],
} satisfies Record<string, TransitionRecord[]>

/** The session: an earlier turn's messages, this turn's prompt, and its assistant message with work left open. */
function sessionMessages(): { messages: MessageWithParts[]; text: TextPart; read: ToolPart; write: ToolPart } {
  const part = { sessionId: 'ses_1', messageId: 'msg_a', step: 1, attempt: 1 }
  const text: TextPart = { ...part, id: 'prt_text', type: 'text', text: 'half an ans', time: { start: 1 } }
  const read: ToolPart = { ...part, id: 'prt_read', type: 'tool', callId: 'c1', tool: 'read', state: { status: 'running', input: {}, time: { start: 1 } } }
  const write: ToolPart = { ...part, id: 'prt_write', type: 'tool', callId: 'c2', tool: 'write', state: { status: 'running', input: {}, time: { start: 1 } } }
  const info = (id: string, role: 'user' | 'assistant', turnId: string): MessageInfo => ({ id, sessionId: 'ses_1', role, turnId, time: { created: 1 } })
  const messages: MessageWithParts[] = [
    { info: { ...info('msg_old', 'assistant', 'trn_0'), time: { created: 0, completed: 0 } }, parts: [] },
    { info: info('msg_u', 'user', 'trn_1'), parts: [] },
    { info: info('msg_a', 'assistant', 'trn_1'), parts: [{ ...part, id: 'prt_start', type: 'step-start', time: { start: 1 } }, text, read, write] },
  ]
  return { messages, text, read, write }
}

function fakeStore(state: keyof typeof logs | 'log-and-row-disagree', options: { retryAt?: number; owner?: string; leaseUntil?: number; claimed?: boolean } = {}) {
  const session = sessionMessages()
  const log = state === 'log-and-row-disagree' ? logs.streaming : logs[state]
  const record: TurnRecord & { input: unknown } = {
    id: 'trn_1',
    sessionId: 'ses_1',
    state: state === 'log-and-row-disagree' ? 'tool-running' : state,
    outcome: null,
    step: 1,
    attempt: 1,
    retryAt: options.retryAt ?? null,
    error: null,
    time: { created: 1, updated: 1 },
    owner: options.owner ?? null,
    leaseUntil: options.leaseUntil ?? null,
    epoch: 3,
    input,
  }
  const written = { rows: [] as TransitionRecord[], parts: [] as Part[], messages: [] as MessageInfo[], turns: [] as TurnUpdate[] }
  const claims: unknown[] = []
  const published: TurnchartEvent[] = []
  const resumed: Array<ResumeRequest<{ tools: ToolSet }>> = []
  const tx = {
    messages: {
      upsertParts: async (parts: Part[]) => void written.parts.push(...structuredClone(parts)),
      upsert: async (info: MessageInfo) => void written.messages.push(structuredClone(info)),
    },
    transitions: { append: async (r: TransitionRecord) => void written.rows.push(structuredClone(r)) },
    turns: { update: async (_id: string, update: TurnUpdate) => void written.turns.push(structuredClone(update)) },
  } as unknown as Store
  const ports: RecoveryPorts<{ tools: ToolSet }, string> = {
    store: {
      turns: {
        open: async () => [record],
        claim: async (id: string, expected: { owner: string | null; epoch: number }, owner: string) => {
          claims.push({ id, expected, owner })
          return options.claimed === false ? null : { owner, epoch: expected.epoch + 1 }
        },
      },
      transitions: { list: async () => log },
      messages: { list: async () => session.messages },
      transaction: (fn: (tx: Store) => Promise<unknown>) => fn(tx),
    } as unknown as RecoveryStore,
    owner: 'this-host:1:engine',
    leaseMs: 30_000,
    policy: 'resume',
    publish: (event) => published.push(event),
    turnConfig: async () => ({ tools }),
    resume: (request) => {
      resumed.push(request)
      return request.record.id
    },
  }
  return { ports, record, written, claims, published, resumed, session }
}

const recover = (ports: RecoveryPorts<{ tools: ToolSet }, string>, runningHere: string[] = []) => recoverWith(ports, (id) => runningHere.includes(id))
const path = (rows: TransitionRecord[]) => rows.map((r) => `${r.seq} ${r.from} --${r.event}--> ${r.to}`)
/** Where the handed snapshot goes on the event recovery sends it. */
const resumesIn = (request: ResumeRequest<unknown>) => {
  // The handed snapshot names its history's nodes by id, as a persisted one (the actor restores them).
  const { value, context, historyValue } = request.from!.snapshot
  const byNode = Object.fromEntries(Object.entries(historyValue).map(([key, nodes]) => [key, nodes.map((node) => turnMachine.getStateNodeById(node.id))]))
  const snapshot = turnMachine.resolveState({ value, context, historyValue: byNode })
  const [next] = transition(turnMachine, snapshot, request.from!.recover as TurnEvent)
  return { state: turnStateName(next), step: next.context.step, attempt: next.context.attempt }
}

test('a turn that died streaming: one crash row with the work closed; it resumes in a new step', async () => {
  const { ports, written, claims, resumed, session } = fakeStore('streaming')

  await expect(recover(ports)).resolves.toEqual(['trn_1'])

  expect(claims).toEqual([{ id: 'trn_1', expected: { owner: null, epoch: 3 }, owner: 'this-host:1:engine' }])
  expect(path(written.rows)).toEqual(['2 streaming --turn.crashed--> interrupted'])
  expect(written.turns).toEqual([expect.objectContaining({ state: 'interrupted', error: null })])
  // The text ends where the last flush left it; both calls are errors (nothing reruns while streaming); the step is finished as interrupted.
  expect(session.text.time.end).toEqual(expect.any(Number))
  expect([session.read.state, session.write.state]).toEqual([
    expect.objectContaining({ status: 'error', error: 'interrupted by a restart' }),
    expect.objectContaining({ status: 'error', error: 'interrupted by a restart' }),
  ])
  const stepFinish = written.parts.find((p) => p.type === 'step-finish')
  expect(stepFinish).toMatchObject({ reason: 'interrupted', step: 1, attempt: 1, messageId: 'msg_a' })
  expect(written.rows[0].parts?.sort()).toEqual(['prt_read', 'prt_text', 'prt_write', stepFinish!.id].sort())

  expect(resumed).toHaveLength(1)
  const [request] = resumed
  expect(request.fence).toEqual({ owner: 'this-host:1:engine', epoch: 4 })
  expect(request.messages).toBe(session.messages) // the closed work is what the resumed turn holds
  expect(request.from).toMatchObject({ seq: 2, recover: { type: 'turn.recover', retryDelayMs: 0 } })
  expect(turnStateName(request.from!.snapshot)).toBe('interrupted')
  expect(resumesIn(request)).toEqual({ state: 'streaming', step: 2, attempt: 1 })
})

test('a turn that died in a retry wait resumes the wait with what is left of it', async () => {
  const retryAt = Date.now() + 60_000
  const { ports, written, resumed } = fakeStore('retry-waiting', { retryAt })

  await recover(ports)

  expect(path(written.rows)).toEqual(['3 retry-waiting --turn.crashed--> interrupted'])
  expect(written.turns).toEqual([expect.objectContaining({ state: 'interrupted', retryAt })])
  expect(written.parts.some((p) => p.type === 'step-finish')).toBe(false) // the step was not streaming
  const recover_ = resumed[0].from!.recover as Extract<TurnEvent, { type: 'turn.recover' }>
  expect(recover_.retryDelayMs).toBeGreaterThan(55_000)
  expect(recover_.retryDelayMs).toBeLessThanOrEqual(60_000)
  expect(resumesIn(resumed[0])).toMatchObject({ state: 'retry-waiting', step: 1 })
})

test('a turn that died running tools: an idempotent call runs again, any other is an error', async () => {
  const { ports, session, resumed } = fakeStore('tool-running')

  await recover(ports)

  expect(session.read.state.status).toBe('running')
  expect(session.write.state).toMatchObject({ status: 'error', error: 'interrupted by a restart', metadata: { interrupted: true } })
  expect(resumesIn(resumed[0])).toMatchObject({ state: 'tool-running' })
})

test('policy abort: the crash row, then the turn is handed over to be aborted', async () => {
  const { ports, written, resumed } = fakeStore('streaming')
  ports.policy = 'abort'

  await recover(ports)

  expect(path(written.rows)).toEqual(['2 streaming --turn.crashed--> interrupted'])
  expect(resumed[0].from!.recover).toEqual({ type: 'turn.abort', reason: 'recovery policy abort' })
  expect(resumesIn(resumed[0]).state).toBe('aborted')
})

test('a turn waiting for approval goes on waiting, and one that never started is started: no row written for either', async () => {
  const waiting = fakeStore('awaiting-approval')
  await recover(waiting.ports)
  expect(waiting.written).toEqual({ rows: [], parts: [], messages: [], turns: [] })
  expect(waiting.resumed[0].from).toMatchObject({ seq: 2, recover: null })
  expect(turnStateName(waiting.resumed[0].from!.snapshot)).toBe('awaiting-approval')
  expect(waiting.resumed[0].from!.snapshot.context.pendingApprovals).toEqual(['c1'])

  const idle = fakeStore('idle')
  await recover(idle.ports)
  expect(idle.written.rows).toEqual([])
  expect(idle.resumed).toEqual([expect.objectContaining({ record: expect.objectContaining({ id: 'trn_1' }), input })])
  expect(idle.resumed[0].from).toBeUndefined()
})

test('a turn whose log and row disagree is ended as failed, its work closed; nothing is resumed', async () => {
  const { ports, written, resumed, published, session } = fakeStore('log-and-row-disagree')

  await expect(recover(ports)).resolves.toEqual([])

  expect(resumed).toEqual([])
  expect(written.rows).toEqual([])
  expect(written.turns).toEqual([expect.objectContaining({ state: 'failed', outcome: 'failed', error: expect.objectContaining({ name: 'ReplayMismatchError' }) })])
  expect(written.messages).toEqual([expect.objectContaining({ id: 'msg_a', error: expect.objectContaining({ name: 'ReplayMismatchError' }), time: expect.objectContaining({ completed: expect.any(Number) }) })])
  // With no state to resume, even an idempotent call is closed.
  expect(session.read.state.status).toBe('error')
  expect(published).toEqual([expect.objectContaining({ type: 'session.error', turnId: 'trn_1' })])
})

test('turns running here, held by a live lease, or claimed by another engine first are left alone', async () => {
  const here = fakeStore('streaming')
  await expect(recover(here.ports, ['trn_1'])).resolves.toEqual([])
  expect(here.claims).toEqual([])

  const leased = fakeStore('streaming', { owner: 'another-host:7:x', leaseUntil: Date.now() + 60_000 })
  await expect(recover(leased.ports)).resolves.toEqual([])
  expect(leased.claims).toEqual([])

  const lostRace = fakeStore('streaming', { claimed: false })
  await expect(recover(lostRace.ports)).resolves.toEqual([])
  expect(lostRace.claims).toHaveLength(1)
  expect(lostRace.written.rows).toEqual([])

  for (const t of [here, leased, lostRace]) expect(t.resumed).toEqual([])
})
