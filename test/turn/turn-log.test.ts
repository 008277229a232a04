/**
 * The turn log through its port (`TurnLogScope`): the chart's snapshots computed
 * with XState's pure `transition()`, a fake writer whose transactions commit all or nothing
 * (a test holds or fails them), and a bus that records what was published. No database.
 */
import { StorageWaitLog } from '../../src/turn/turn-log/storage-wait-log'
import { createMachine, initialTransition, transition, type AnyEventObject, type SnapshotFrom } from 'xstate'
import { turnMachine, type TurnMachine } from '../../machines/turn.machine'
import type { TurnEvent } from '../../machines/turn.types'
import { TurnOwnershipLostError } from '../../src/core/errors'
import type { TurnchartEvent } from '../../src/core/bus'
import type { TurnUpdate } from '../../src/store/store'
import { WriteQueue } from '../../src/turn/write-queue'
import { effectFreeTag, TurnLog, type PromptTransaction, type TurnLogScope } from '../../src/turn/turn-log/turn-log'
import type { LogTx } from '../../src/turn/turn-log/log-rows'
import type { TurnEnd } from '../../src/turn/turn-log/turn-end'
import type { MessageInfo, MessageWithParts, Part, TextPart, ToolPart, TransitionRecord } from '../../src/core/types'

interface Deferred {
  promise: Promise<void>
  resolve(): void
}
const deferred = (): Deferred => {
  let resolve!: () => void
  const promise = new Promise<void>((r) => (resolve = r))
  return { promise, resolve }
}

/** A turn with one assistant message: an open text part and a running tool call. */
function fakeTurn() {
  const text: TextPart = { id: 'prt_text', sessionId: 'ses_1', messageId: 'msg_a', type: 'text', text: 'so far', time: { start: 1 } }
  const call: ToolPart = { id: 'prt_call', sessionId: 'ses_1', messageId: 'msg_a', type: 'tool', callId: 'c1', tool: 'echo', state: { status: 'running', input: {}, time: { start: 1 } } }
  const assistant: MessageWithParts = {
    info: { id: 'msg_a', sessionId: 'ses_1', role: 'assistant', turnId: 'trn_1', time: { created: 1 }, tokens: { input: 7, output: 3, reasoning: 0, cache: { read: 0, write: 0 } }, cost: 0.5 },
    parts: [text, call],
  }

  /** What committed: the log, and the turn row's updates. */
  const rows: TransitionRecord[] = []
  const updates: TurnUpdate[] = []
  const changed: Part[] = []
  const messages: MessageInfo[] = []
  const published: TurnchartEvent[] = []
  const touched: string[] = []
  const control = {
    /** Fails the transaction that writes a row to this state (once). */
    failTo: undefined as string | undefined,
    failWith: new Error('disk I/O error') as unknown,
    /** Holds the next transaction until resolved. */
    hold: undefined as Deferred | undefined,
    sealed: false,
    /** Transactions committed. */
    commits: 0,
  }
  const scope: TurnLogScope = {
    turnId: 'trn_1',
    sessionId: 'ses_1',
    queue: new WriteQueue(),
    config: { redactor: { value: (v) => v, text: (t) => t } },
    messages: { stepTools: [call], assistantMessage: () => assistant, assistantMessages: () => [assistant], all: [assistant] },
    outages: { waits: new StorageWaitLog() },
    writer: {
      takeTouched: () => touched.splice(0),
      async commit(more) {
        const held = control.hold
        control.hold = undefined
        await held?.promise
        // All or nothing, as a transaction.
        const tx: { rows: TransitionRecord[]; updates: TurnUpdate[] } = { rows: [], updates: [] }
        const port = {
          transitions: {
            append: async (row: TransitionRecord) => {
              if (row.to === control.failTo) {
                control.failTo = undefined
                throw control.failWith
              }
              tx.rows.push(structuredClone(row))
            },
          },
          turns: { update: async (_id: string, update: TurnUpdate) => void tx.updates.push(structuredClone(update)) },
        } as unknown as LogTx
        await more(port)
        rows.push(...tx.rows)
        updates.push(...tx.updates)
        control.commits++
      },
      changed: (part) => changed.push(part),
      message: (info) => messages.push(structuredClone(info)),
      seal: () => void (control.sealed = true),
      flush: async () => undefined,
    },
  }
  return { scope, rows, updates, changed, messages, published, touched, control, text, call, assistant }
}

type Turn = ReturnType<typeof fakeTurn>

/** The chart run purely: each event's snapshot goes to the recorder, as the actor's inspector does. */
function recordTurn(turn: Turn) {
  let snapshot: SnapshotFrom<TurnMachine>
  let end!: (result: TurnEnd) => void
  const ended = new Promise<TurnEnd>((resolve) => (end = resolve))
  const lost: TurnOwnershipLostError[] = []
  const send = (event: TurnEvent | AnyEventObject) => {
    ;[snapshot] = transition(turnMachine, snapshot, event as TurnEvent)
    recorder.record(event, snapshot)
  }
  const recorder = new TurnLog({ scope: turn.scope, bus: { publish: (event) => turn.published.push(event) }, fence: { owner: 'me', epoch: 1 } })
  void recorder.failed.then((error) => send({ type: 'turn.fail', error }))
  void recorder.ended.then((result) => (result.kind === 'lost' ? lost.push(result.error) : end(result)))
  ;[snapshot] = initialTransition(turnMachine, { turnId: 'trn_1', sessionId: 'ses_1', autoCompact: true, maxCompactions: 1 })
  recorder.record({ type: 'xstate.init' }, snapshot)
  /** The prompt is stored and the step gate lets the first step start (both rows in one commit). */
  const start = () => {
    send({ type: 'turn.start' })
    send({ type: 'gate.continue' })
  }
  return { recorder, send, start, ended, lost }
}

const path = (rows: TransitionRecord[]) => rows.map((r) => `${r.seq} ${r.from} --${r.event}--> ${r.to}`)
const retry = { type: 'step.failed', error: { name: 'APIError', message: 'overloaded' }, overflow: false, retryDelayMs: 500 } as const
const finished = { type: 'step.finished', finishReason: 'stop', toolCalls: 0, overflow: false } as const

test('each transition is one row, in order, with the turn row and the parts touched since the last; events follow the commit', async () => {
  const turn = fakeTurn()
  const { recorder, send, start, ended } = recordTurn(turn)

  start()
  await recorder.committed()
  turn.touched.push('prt_text') // the step streamed into a part: the next row names it
  send(retry)
  send({ type: 'xstate.after.retryDelay.turn.running.step.retry-waiting' })
  send(finished)
  const end = await ended

  expect(path(turn.rows)).toEqual([
    '1 idle --turn.start--> step-gate', '2 step-gate --gate.continue--> streaming',
    '3 streaming --step.failed--> retry-waiting',
    '4 retry-waiting --xstate.after.retryDelay.turn.running.step.retry-waiting--> streaming',
    '5 streaming --step.finished--> completed',
  ])
  expect(turn.rows[2]).toMatchObject({ parts: ['prt_text'], payload: { error: retry.error, retryDelayMs: 500 } })
  expect(turn.rows[0].parts).toBeUndefined()
  expect(turn.rows[1].parts).toBeUndefined()
  // (the gate's row and the one leaving it: one commit, one update of the turn row)
  expect(turn.updates.map((u) => [u.state, u.attempt, u.retryAt === null ? null : u.retryAt - turn.rows[2].time])).toEqual([
    ['streaming', 1, null],
    ['retry-waiting', 1, 500], // the deadline recovery resumes the wait at
    ['streaming', 2, null],
    ['completed', 2, null],
  ])
  expect(turn.updates.at(-1)).toMatchObject({ outcome: 'completed', error: null })
  // The turn's usage rides on its final row's update (no write of its own); no other update has one.
  expect(turn.updates.at(-1)!.usage).toMatchObject({ turnId: 'trn_1', tokens: { input: 7, output: 3 }, cost: 0.5 })
  expect(turn.updates.slice(0, -1).filter((u) => u.usage)).toEqual([])
  expect(end).toEqual({ kind: 'finished', outcome: 'completed' })

  const transitions = turn.published.filter((e) => e.type === 'turn.transition').map((e) => (e.type === 'turn.transition' ? e.seq : 0))
  expect(transitions).toEqual([1, 2, 3, 4, 5])
  expect(turn.published.filter((e) => e.type === 'session.status').map((e) => (e.type === 'session.status' ? e.status.type : ''))).toEqual([
    'busy',
    'busy',
    'retry',
    'busy',
    'idle',
  ])
})

test('the end of the turn closes its open work: the text ends, the running call is stopped, the message completes; the writer is sealed', async () => {
  const turn = fakeTurn()
  const { send, start, ended } = recordTurn(turn)
  start()
  send({ type: 'turn.abort' })
  await expect(ended).resolves.toMatchObject({ outcome: 'aborted' })

  expect(turn.text.time.end).toEqual(expect.any(Number))
  expect(turn.call.state).toMatchObject({ status: 'error', error: 'Tool execution aborted', metadata: { interrupted: true } })
  expect(turn.changed).toEqual(expect.arrayContaining([turn.text, turn.call]))
  expect(turn.messages.at(-1)).toMatchObject({ id: 'msg_a', time: { completed: expect.any(Number) } })
  expect(turn.control.sealed).toBe(true)
  expect(turn.updates.at(-1)).toMatchObject({ state: 'aborted', outcome: 'aborted' })
})

test('committed() waits for every queued row: true once written, false when the row failed', async () => {
  const turn = fakeTurn()
  const { recorder, send, start } = recordTurn(turn)
  turn.control.hold = deferred()
  const hold = turn.control.hold

  start()
  let gate: boolean | undefined
  const committed = recorder.committed().then((ok) => (gate = ok))
  await new Promise((r) => setImmediate(r))
  expect(gate).toBeUndefined() // the step may not start: its row is not in the database
  expect(turn.rows).toEqual([])
  expect(turn.published).toEqual([]) // nothing is told before it is written
  hold.resolve()
  await committed
  expect(gate).toBe(true)
  expect(path(turn.rows)).toEqual(['1 idle --turn.start--> step-gate', '2 step-gate --gate.continue--> streaming'])

  turn.control.failTo = 'retry-waiting'
  send(retry)
  await expect(recorder.committed()).resolves.toBe(false)
})

test('a failed write fails the turn: rows after it are dropped, only `<last committed> --turn.fail--> failed` is written', async () => {
  const turn = fakeTurn()
  const { send, start, ended } = recordTurn(turn)
  start()
  turn.control.failTo = 'retry-waiting'
  send(retry) // fails; the recorder sends turn.fail, which ends the chart
  const end = await ended

  expect(path(turn.rows)).toEqual(['1 idle --turn.start--> step-gate', '2 step-gate --gate.continue--> streaming', '3 streaming --turn.fail--> failed'])
  expect(turn.rows[2].payload).toEqual({ error: expect.objectContaining({ name: 'StorageError', message: expect.stringContaining('disk I/O error') }) })
  expect(turn.updates.at(-1)).toMatchObject({ state: 'failed', outcome: 'failed', error: { name: 'StorageError', operation: 'recording the transition to retry-waiting' } })
  expect(end).toMatchObject({ outcome: 'failed', error: { name: 'StorageError' } })
  expect(turn.call.state).toMatchObject({ status: 'error', error: 'Tool not run: the turn failed (StorageError)' })
})

test('a final row that fails is replaced by the failure row from the last committed state', async () => {
  const turn = fakeTurn()
  const { send, start, ended } = recordTurn(turn)
  start()
  turn.control.failTo = 'completed'
  send(finished)
  await expect(ended).resolves.toMatchObject({ outcome: 'failed', error: { name: 'StorageError' } })
  expect(path(turn.rows)).toEqual(['1 idle --turn.start--> step-gate', '2 step-gate --gate.continue--> streaming', '3 streaming --turn.fail--> failed'])
})

test('a part flush that fails (writeFailed) fails the turn the same way', async () => {
  const turn = fakeTurn()
  const { recorder, send, start, ended } = recordTurn(turn)
  start()
  await recorder.committed()
  recorder.writeFailed(new Error('disk full'))
  await expect(ended).resolves.toMatchObject({ outcome: 'failed', error: { name: 'StorageError', operation: 'writing parts' } })
  expect(path(turn.rows)).toEqual(['1 idle --turn.start--> step-gate', '2 step-gate --gate.continue--> streaming', '3 streaming --turn.fail--> failed'])
})

test('a write that finds the turn owned by another engine stops the recorder: nothing more is written', async () => {
  const turn = fakeTurn()
  const { recorder, send, start, lost } = recordTurn(turn)
  start()
  turn.control.failTo = 'retry-waiting'
  turn.control.failWith = new TurnOwnershipLostError('trn_1', 'me')
  send(retry)
  await expect(recorder.committed()).resolves.toBe(false)
  send({ type: 'xstate.after.retryDelay.turn.running.step.retry-waiting' })
  await recorder.settled()

  expect(lost).toEqual([expect.objectContaining({ name: 'TurnOwnershipLostError' })])
  expect(path(turn.rows)).toEqual(['1 idle --turn.start--> step-gate', '2 step-gate --gate.continue--> streaming'])
  expect(turn.published.some((e) => e.type === 'session.error')).toBe(false)
})

/** A chart with an effect-free state between two that act: `gate` decides, `work` calls out. */
const gatedChart = createMachine({
  id: 'gated',
  initial: 'idle',
  context: { step: 0, attempt: 1, retryDelayMs: 0, error: null },
  states: {
    idle: { on: { 'turn.start': 'gate', 'turn.fail': 'failed' } },
    gate: { tags: [effectFreeTag], on: { 'gate.continue': 'work', 'gate.complete': 'completed', 'turn.fail': 'failed' } },
    work: { on: { 'work.done': 'gate', 'turn.fail': 'failed' } },
    completed: { type: 'final' },
    failed: { type: 'final' },
  },
})

function recordGated(turn: Turn) {
  let snapshot = initialTransition(gatedChart)[0]
  const recorder = new TurnLog({ scope: turn.scope, bus: { publish: (event) => turn.published.push(event) }, fence: { owner: 'me', epoch: 1 } })
  const send = (event: AnyEventObject) => {
    ;[snapshot] = transition(gatedChart, snapshot, event)
    recorder.record(event, snapshot as unknown as SnapshotFrom<TurnMachine>)
  }
  void recorder.failed.then((error) => send({ type: 'turn.fail', error }))
  recorder.record({ type: 'xstate.init' }, snapshot as unknown as SnapshotFrom<TurnMachine>)
  return { recorder, send, ended: recorder.ended }
}

test('an effect-free state adds rows, not commits: its row is written in the transaction of the row that leaves it', async () => {
  const turn = fakeTurn()
  const { recorder, send, ended } = recordGated(turn)
  send({ type: 'turn.start' })
  // Held: nothing to wait for, nothing written.
  expect(await recorder.committed()).toBe(true)
  expect(turn.control.commits).toBe(0)
  send({ type: 'gate.continue' })
  expect(await recorder.committed()).toBe(true)
  expect(turn.control.commits).toBe(1)
  send({ type: 'work.done' })
  send({ type: 'gate.complete' })
  await ended
  expect(turn.control.commits).toBe(2)
  expect(path(turn.rows)).toEqual(['1 idle --turn.start--> gate', '2 gate --gate.continue--> work', '3 work --work.done--> gate', '4 gate --gate.complete--> completed'])
  // One state per commit on the turn row: the last row's.
  expect(turn.updates.map((u) => u.state)).toEqual(['work', 'completed'])
  // Every row is published, in order, after its commit.
  expect(turn.published.filter((e) => e.type === 'turn.transition').map((e) => (e.type === 'turn.transition' ? e.seq : 0))).toEqual([1, 2, 3, 4])
})

test('a held row whose next write fails is dropped with it: the failure row leaves the last committed state', async () => {
  const turn = fakeTurn()
  const { recorder, send, ended } = recordGated(turn)
  send({ type: 'turn.start' })
  send({ type: 'gate.continue' })
  await recorder.committed()
  send({ type: 'work.done' })
  turn.control.failTo = 'work'
  send({ type: 'gate.continue' })
  await ended
  expect(path(turn.rows)).toEqual(['1 idle --turn.start--> gate', '2 gate --gate.continue--> work', '3 work --turn.fail--> failed'])
})

test('before the first call, the held first rows are written inside the prompt transaction (writeAhead waits for the verdict)', async () => {
  const turn = fakeTurn()
  const { recorder, send } = recordGated(turn)
  const written: TransitionRecord[] = []
  const tx = { transitions: { append: async (row: TransitionRecord) => void written.push(row) }, turns: { update: async () => undefined } } as unknown as LogTx
  const transaction: PromptTransaction = async (write) => write?.(tx)
  const ahead = recorder.writeFirstRowIn(transaction, () => send({ type: 'turn.start' }))
  // The gate decides later (an async rule): the prompt's transaction waits for its row.
  await Promise.resolve()
  expect(written).toEqual([])
  send({ type: 'gate.continue' })
  const publish = await ahead
  publish()
  expect(path(written)).toEqual(['1 idle --turn.start--> gate', '2 gate --gate.continue--> work'])
  expect(turn.control.commits).toBe(0) // no commit of the recorder's own
  expect(await recorder.committed()).toBe(true)
})

test('a final row that cannot be written, nor its failure row, ends the turn `unwritten`: its row stays open for recovery', async () => {
  const turn = fakeTurn()
  const { send, start, ended } = recordTurn(turn)
  start()
  // The completed row fails, and the failure row that replaces it fails too.
  const append = turn.scope.writer.commit
  let calls = 0
  turn.scope.writer.commit = async (more, options) => {
    if (++calls >= 2) throw new Error('disk I/O error')
    return append(more, options)
  }
  send(finished)
  const end = await ended
  expect(end).toEqual({ kind: 'unwritten', error: expect.objectContaining({ name: 'StorageError', operation: 'recording the transition to completed' }) })
  const told = turn.published.find((e) => e.type === 'session.error')
  expect(told).toMatchObject({ error: { name: 'StorageError', message: expect.stringContaining('recovery ends or resumes it') } })
  expect(path(turn.rows)).toEqual(['1 idle --turn.start--> step-gate', '2 step-gate --gate.continue--> streaming'])
  expect(turn.updates.map((u) => u.state)).toEqual(['streaming'])
  expect(turn.published.filter((e) => e.type === 'session.error' || e.type === 'session.status').map((e) => e.type)).toEqual(['session.status', 'session.status', 'session.error', 'session.status'])
  expect(turn.control.sealed).toBe(true)
})

test('detach (close) records nothing more and lets the queued writes land; the turn ends `detached`, its row open', async () => {
  const turn = fakeTurn()
  const { recorder, send, start } = recordTurn(turn)
  start()
  turn.control.hold = deferred()
  const hold = turn.control.hold
  send(retry) // queued, held in its transaction
  let stopped = false
  const detached = recorder.detach(() => (stopped = true))
  expect(stopped).toBe(true)
  send({ type: 'xstate.after.retryDelay.turn.running.step.retry-waiting' }) // after detach: not recorded
  hold.resolve()
  await detached
  await expect(recorder.ended).resolves.toEqual({ kind: 'detached' })
  expect(path(turn.rows)).toEqual(['1 idle --turn.start--> step-gate', '2 step-gate --gate.continue--> streaming', '3 streaming --step.failed--> retry-waiting'])
  expect(recorder.leaving).toBe(true)
  expect(turn.control.sealed).toBe(true)
})

test('the first end wins: a turn lost to another engine ends `lost`, and a later end changes nothing', async () => {
  const turn = fakeTurn()
  const { recorder, send, start } = recordTurn(turn)
  start()
  await recorder.committed()
  recorder.lose(new TurnOwnershipLostError('trn_1', 'me'))
  recorder.end({ kind: 'detached' })
  send(finished) // not recorded: the turn ended here
  await recorder.settled()
  await expect(recorder.ended).resolves.toMatchObject({ kind: 'lost', error: { name: 'TurnOwnershipLostError' } })
  expect(path(turn.rows)).toEqual(['1 idle --turn.start--> step-gate', '2 step-gate --gate.continue--> streaming'])
  expect(turn.published.filter((e) => e.type === 'turn.lost')).toHaveLength(1)
})
