/**
 * Recovery through its ports (`RecoveryPorts`) on a MemoryStore seeded with one unfinished turn
 * (its row, its log, its session's messages) and a `resume` that records what it is handed.
 * Asserts the rows recovery leaves in the store and where the chart resumes, without a
 * database or a running turn.
 */
import { tool, jsonSchema, type ToolSet } from 'ai'
import { transition } from 'xstate'
import { turnMachine, turnStateName } from '../../machines/turn.machine'
import type { TurnEvent, TurnInput } from '../../machines/turn.types'
import type { TurnchartEvent } from '../../src/core/bus'
import { newId } from '../../src/core/ids'
import type { MessageInfo, Part, StepStartPart, TextPart, ToolPart, TransitionRecord, TurnRecord } from '../../src/core/types'
import { MemoryStore } from '../../src/store/memory/memory-store'
import { idempotent } from '../../src/tools/tool-options'
import { recoverWith, type RecoveryPorts, type RecoveryStore, type ResumeRequest } from '../../src/turn/recovery/recover-turns'

const owner = 'this-host:1:engine'
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

/**
 * A store holding session ses_1: an earlier turn's message, this turn's prompt, and its
 * assistant message with work left open (streamed text, two running tool calls); and turn
 * trn_1, unfinished in `state`, at epoch 3, with its log.
 */
async function seededStore(
  state: keyof typeof logs | 'log-and-row-disagree',
  options: { retryAt?: number; owner?: string; leaseUntil?: number; policy?: 'resume' | 'abort' } = {},
) {
  const store = new MemoryStore()
  await store.sessions.insert({ id: 'ses_1', title: null, time: { created: 1, updated: 1 } })
  const ids = { old: newId('msg'), user: newId('msg'), assistant: newId('msg') }
  const info = (id: string, role: 'user' | 'assistant', turnId: string): MessageInfo => ({ id, sessionId: 'ses_1', role, turnId, time: { created: 1 } })
  await store.messages.upsert({ ...info(ids.old, 'assistant', 'trn_0'), time: { created: 0, completed: 0 } })
  await store.messages.upsert(info(ids.user, 'user', 'trn_1'))
  await store.messages.upsert(info(ids.assistant, 'assistant', 'trn_1'))
  const part = { sessionId: 'ses_1', messageId: ids.assistant, step: 1, attempt: 1 }
  const start: StepStartPart = { ...part, id: newId('prt'), type: 'step-start', time: { start: 1 } }
  const text: TextPart = { ...part, id: newId('prt'), type: 'text', text: 'half an ans', time: { start: 1 } }
  const read: ToolPart = { ...part, id: newId('prt'), type: 'tool', callId: 'c1', tool: 'read', state: { status: 'running', input: {}, time: { start: 1 } } }
  const write: ToolPart = { ...part, id: newId('prt'), type: 'tool', callId: 'c2', tool: 'write', state: { status: 'running', input: {}, time: { start: 1 } } }
  await store.messages.upsertParts([start, text, read, write], 1)

  const log = state === 'log-and-row-disagree' ? logs.streaming : logs[state]
  const record: TurnRecord = {
    id: 'trn_1',
    sessionId: 'ses_1',
    state: state === 'log-and-row-disagree' ? 'tool-running' : state,
    outcome: null,
    step: 1,
    attempt: 1,
    retryAt: options.retryAt ?? null,
    error: null,
    time: { created: 1, updated: 1 },
  }
  await store.turns.insert(record, input)
  for (const r of log) await store.transitions.append(r)
  // Three claims before this one (epoch 3); then unowned, or the owner and lease asked for.
  await store.turns.claim('trn_1', { owner: null, epoch: 0 }, 'earlier', 0)
  await store.turns.claim('trn_1', { owner: 'earlier', epoch: 1 }, 'earlier', 0)
  await store.turns.claim('trn_1', { owner: 'earlier', epoch: 2 }, options.owner ?? 'earlier', options.leaseUntil ?? 0)
  if (!options.owner) await store.turns.release('earlier')

  const published: TurnchartEvent[] = []
  const resumed: Array<ResumeRequest<{ tools: ToolSet }>> = []
  const ports: RecoveryPorts<{ tools: ToolSet }, string> = {
    store,
    owner,
    leaseMs: 30_000,
    policy: options.policy ?? 'resume',
    publish: (event) => published.push(event),
    turnConfig: async () => ({ tools }),
    resume: (request) => {
      resumed.push(request)
      return request.record.id
    },
  }
  /** What the store holds of the turn: its row, its log, its session's messages and the assistant message's parts. */
  const stored = async () => {
    const messages = await store.messages.list('ses_1')
    const parts = messages.find((m) => m.info.id === ids.assistant)!.parts
    return {
      turn: (await store.turns.get('trn_1'))!,
      log: await store.transitions.list('trn_1'),
      messages,
      assistant: messages.find((m) => m.info.id === ids.assistant)!.info,
      parts,
    }
  }
  return { store, ports, published, resumed, stored, seeded: { log, text, read, write, ids } }
}

/** A part of the assistant message, as stored. */
const partOf = <P extends Part>(stored: { parts: Part[] }, id: string) => stored.parts.find((p) => p.id === id) as P

const recover = (ports: RecoveryPorts<{ tools: ToolSet }, string>, runningHere: string[] = []) =>
  recoverWith(ports, { recoverOnce: async (id, run) => (runningHere.includes(id) ? undefined : run()) })
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
  const { ports, resumed, stored, seeded, store } = await seededStore('streaming')
  const before = await stored()
  const claimedAt = Date.now()

  await expect(recover(ports)).resolves.toEqual(['trn_1'])

  const after = await stored()
  // Claimed (epoch 3 → 4, this engine's lease), and the crash written with the row's state.
  expect(after.turn).toMatchObject({ owner, epoch: 4, state: 'interrupted', outcome: null, error: null })
  expect(after.turn.leaseUntil).toBeGreaterThanOrEqual(claimedAt + 30_000)
  expect(path(after.log.slice(before.log.length))).toEqual(['2 streaming --turn.crashed--> interrupted'])
  // The text ends where the last flush left it; both calls are errors (nothing reruns while streaming); the step is finished as interrupted.
  expect(partOf<TextPart>(after, seeded.text.id)).toMatchObject({ text: 'half an ans', time: { start: 1, end: expect.any(Number) } })
  expect([partOf<ToolPart>(after, seeded.read.id).state, partOf<ToolPart>(after, seeded.write.id).state]).toEqual([
    expect.objectContaining({ status: 'error', error: 'interrupted by a restart' }),
    expect.objectContaining({ status: 'error', error: 'interrupted by a restart' }),
  ])
  const stepFinish = after.parts.find((p) => p.type === 'step-finish')
  expect(stepFinish).toMatchObject({ reason: 'interrupted', step: 1, attempt: 1, messageId: seeded.ids.assistant })
  expect(after.parts.at(-1)).toEqual(stepFinish) // the step's last part
  expect(after.log.at(-1)!.parts?.sort()).toEqual([seeded.read.id, seeded.text.id, seeded.write.id, stepFinish!.id].sort())

  expect(resumed).toHaveLength(1)
  const [request] = resumed
  expect(request.fence).toEqual({ owner, epoch: 4 })
  // The closed work the resumed turn holds is what the store holds.
  expect(request.messages).toEqual(await store.messages.list('ses_1', { fromLatestSummary: true }))
  expect(request.from).toMatchObject({ seq: 2, recover: { type: 'turn.recover', retryDelayMs: 0 } })
  expect(turnStateName(request.from!.snapshot)).toBe('interrupted')
  // a new step, through the step gate (its verdict starts step 2)
  expect(resumesIn(request)).toEqual({ state: 'step-gate', step: 1, attempt: 1 })
})

test('a turn that died in a retry wait resumes the wait with what is left of it', async () => {
  const retryAt = Date.now() + 60_000
  const { ports, resumed, stored } = await seededStore('retry-waiting', { retryAt })
  const before = await stored()

  await recover(ports)

  const after = await stored()
  expect(path(after.log.slice(before.log.length))).toEqual(['3 retry-waiting --turn.crashed--> interrupted'])
  expect(after.turn).toMatchObject({ state: 'interrupted', retryAt })
  expect(after.parts.some((p) => p.type === 'step-finish')).toBe(false) // the step was not streaming
  const recover_ = resumed[0].from!.recover as Extract<TurnEvent, { type: 'turn.recover' }>
  expect(recover_.retryDelayMs).toBeGreaterThan(55_000)
  expect(recover_.retryDelayMs).toBeLessThanOrEqual(60_000)
  expect(resumesIn(resumed[0])).toMatchObject({ state: 'retry-waiting', step: 1 })
})

test('a turn that died running tools: an idempotent call runs again (its next execution), any other is in doubt', async () => {
  const { ports, resumed, stored, seeded } = await seededStore('tool-running')

  await recover(ports)

  const after = await stored()
  expect(partOf<ToolPart>(after, seeded.read.id).state).toMatchObject({ status: 'running', execution: 2 })
  expect(partOf<ToolPart>(after, seeded.write.id).state).toMatchObject({ status: 'in-doubt', reason: 'restart', execution: 1 })
  expect(resumesIn(resumed[0])).toMatchObject({ state: 'tool-running' })
})

test('policy abort: the crash row, then the turn is handed over to be aborted', async () => {
  const { ports, resumed, stored } = await seededStore('streaming', { policy: 'abort' })
  const before = await stored()

  await recover(ports)

  expect(path((await stored()).log.slice(before.log.length))).toEqual(['2 streaming --turn.crashed--> interrupted'])
  expect(resumed[0].from!.recover).toEqual({ type: 'turn.abort', reason: 'recovery policy abort' })
  expect(resumesIn(resumed[0]).state).toBe('aborted')
})

test('a turn waiting for approval goes on waiting, and one that never started is started: no row written for either', async () => {
  const waiting = await seededStore('awaiting-approval')
  const waitingBefore = await waiting.stored()
  await recover(waiting.ports)
  const waitingAfter = await waiting.stored()
  // Only the claim changed the row: no transition, no part, no message written.
  expect(waitingAfter.turn).toEqual({ ...waitingBefore.turn, owner, epoch: 4, leaseUntil: expect.any(Number) })
  expect(waitingAfter.log).toEqual(waitingBefore.log)
  expect(waitingAfter.messages).toEqual(waitingBefore.messages)
  expect(waiting.resumed[0].from).toMatchObject({ seq: 2, recover: null })
  expect(turnStateName(waiting.resumed[0].from!.snapshot)).toBe('awaiting-approval')
  expect(waiting.resumed[0].from!.snapshot.context.pendingApprovals).toEqual(['c1'])

  const idle = await seededStore('idle')
  const idleBefore = await idle.stored()
  await recover(idle.ports)
  expect((await idle.stored()).log).toEqual([])
  expect((await idle.stored()).messages).toEqual(idleBefore.messages)
  expect(idle.resumed).toEqual([expect.objectContaining({ record: expect.objectContaining({ id: 'trn_1' }), input })])
  expect(idle.resumed[0].from).toBeUndefined()
})

test('a turn whose log and row disagree is ended as failed, its work closed; nothing is resumed', async () => {
  const { ports, resumed, published, stored, seeded } = await seededStore('log-and-row-disagree')
  const before = await stored()

  await expect(recover(ports)).resolves.toEqual([])

  const after = await stored()
  expect(resumed).toEqual([])
  expect(after.log).toEqual(before.log)
  expect(after.turn).toMatchObject({ state: 'failed', outcome: 'failed', error: expect.objectContaining({ name: 'ReplayMismatchError' }) })
  expect(after.assistant).toMatchObject({ error: expect.objectContaining({ name: 'ReplayMismatchError' }), time: { completed: expect.any(Number) } })
  // With no state to resume, even an idempotent call is closed.
  expect(partOf<ToolPart>(after, seeded.read.id).state.status).toBe('error')
  expect(published).toEqual([expect.objectContaining({ type: 'session.error', turnId: 'trn_1' })])
})

test('turns running here, held by a live lease, or claimed by another engine first are left alone', async () => {
  const here = await seededStore('streaming')
  const hereBefore = await here.stored()
  await expect(recover(here.ports, ['trn_1'])).resolves.toEqual([])
  expect(await here.stored()).toEqual(hereBefore)

  const leased = await seededStore('streaming', { owner: 'another-host:7:x', leaseUntil: Date.now() + 60_000 })
  const leasedBefore = await leased.stored()
  await expect(recover(leased.ports)).resolves.toEqual([])
  expect(await leased.stored()).toEqual(leasedBefore)

  // Another engine claims the turn between recovery's read of the open turns and its claim.
  const lostRace = await seededStore('streaming')
  const raced: RecoveryStore = {
    ...lostRace.ports.store,
    transaction: (fn) => lostRace.store.transaction(fn),
    turns: new Proxy(lostRace.store.turns, {
      get: (target, key, receiver) =>
        key === 'open'
          ? async () => {
              const open = await target.open()
              await target.claim('trn_1', { owner: null, epoch: 3 }, 'another-host:7:x', Date.now() + 60_000)
              return open
            }
          : Reflect.get(target, key, receiver),
    }),
  }
  const racedBefore = await lostRace.stored()
  await expect(recover({ ...lostRace.ports, store: raced })).resolves.toEqual([])
  const racedAfter = await lostRace.stored()
  expect(racedAfter.turn).toMatchObject({ owner: 'another-host:7:x', epoch: 4 }) // the other engine's, not this one's
  expect(racedAfter.log).toEqual(racedBefore.log)
  expect(racedAfter.messages).toEqual(racedBefore.messages)

  for (const t of [here, leased, lostRace]) expect(t.resumed).toEqual([])
})

/**
 * A store whose first claim of trn_1 lets `before` run first: what the turn's old owner, alive
 * with an expired lease, does between recovery's read of the row and its claim.
 */
function claimAfter(store: RecoveryStore, before: () => Promise<void>): RecoveryStore {
  let done = false
  const turns = Object.create(store.turns) as RecoveryStore['turns']
  turns.claim = async (...args) => {
    if (!done) (done = true), await before()
    return store.turns.claim(...args)
  }
  return { ...store, turns, transitions: store.transitions, messages: store.messages, transaction: store.transaction.bind(store) }
}

test('the old owner wrote rows between the read and the claim (its lease ran out, it was alive): recovery resumes from the row as it is after the claim, not a ReplayMismatchError', async () => {
  const { ports, resumed, store } = await seededStore('tool-running', { owner: 'other-host:7:old', leaseUntil: 1 })
  const racing = claimAfter(store, async () => {
    // The tools finished and the next step started: two rows, the turn row with them (fenced on the old owner's epoch 3).
    await store.transaction(async (tx) => {
      await tx.turns.update('trn_1', { state: 'streaming', step: 2, attempt: 1, retryAt: null, error: null }, 10, { owner: 'other-host:7:old', epoch: 3 })
      await tx.transitions.append(row(3, 'tool-running', 'tools.finished', 'step-gate', { overflow: false }))
      await tx.transitions.append(row(4, 'step-gate', 'gate.continue', 'streaming'))
    })
  })
  await expect(recover({ ...ports, store: racing })).resolves.toEqual(['trn_1'])
  expect((await store.turns.get('trn_1'))).toMatchObject({ owner, outcome: null, state: 'interrupted' })
  expect(path((await store.transitions.list('trn_1')).slice(4))).toEqual(['5 streaming --turn.crashed--> interrupted'])
  expect(resumed[0].record.state).toBe('streaming')
})

test('the old owner renewed its lease between the read and the claim: the claim fails, the turn stays its', async () => {
  const { ports, resumed, store } = await seededStore('tool-running', { owner: 'other-host:7:old', leaseUntil: 1 })
  const racing = claimAfter(store, async () => {
    await store.turns.renewLeases([{ id: 'trn_1', epoch: 3 }], 'other-host:7:old', Date.now() + 30_000)
  })
  await expect(recover({ ...ports, store: racing })).resolves.toEqual([])
  expect(await store.turns.get('trn_1')).toMatchObject({ owner: 'other-host:7:old', epoch: 3, state: 'tool-running' })
  expect(resumed).toEqual([])
})
