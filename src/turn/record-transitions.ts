/**
 * The transition recorder: the one writer of a turn's log, and the gate of its effects.
 *
 * Each transition of the chart is written in one transaction with the rows that changed since
 * the last one (parts, messages) and the turn's new state, fenced on this engine still owning
 * the turn. The actors of a state wait for `committed()` before they do anything (write-ahead):
 * no model request, tool run or summary starts before the row that entered its state is in the
 * database. Events are published after the commit.
 *
 * A state tagged `effect-free` (the step gate: it decides, and calls nothing outside the turn)
 * needs no commit of its own before it acts: the row that enters it is held and written in the
 * transaction of the next row (the one that leaves it), so such a state adds rows but no commit.
 * A crash while it is held leaves the log at the last committed row, where recovery resumes as
 * if the held state had not been entered. Before the first model call the held rows ride in the
 * prompt's transaction (`writeAhead` waits for the row that leaves the effect-free state).
 *
 * A failed write fails the turn: nothing but the final row is written after it, and that row
 * leaves the last committed state (`<committed> --turn.fail--> failed`), so the log always
 * replays. A write that finds the turn owned by another engine stops the turn here at once.
 */
import type { AnyEventObject, InspectionEvent, SnapshotFrom } from 'xstate'
import { retryWaitStates, turnStateName, type TurnMachine } from '../../machines/turn.machine'
import type { TurnContext } from '../../machines/turn.types'
import type { Bus } from '../core/bus'
import { MessageAbortedError, serializeError, StorageError, TurnOwnershipLostError, type SerializedError } from '../core/errors'
import type { Store, TurnFence } from '../store/store'
import type { Redactor } from '../core/secrets/redact-secrets'
import type { MessageInfo, MessageWithParts, Part, SessionStatus, ToolPart, TransitionRecord, TurnOutcome } from '../core/types'
import type { NotRunReason } from '../tools/tool-part'
import { closeOpenWork } from './close-open-work'
import { deferred } from '../core/deferred'
import { retryAtOf, writeLogRows } from './turn-log/log-rows'

type TurnSnapshot = SnapshotFrom<TurnMachine>

const finalStates = new Set(['completed', 'failed', 'aborted'])

export interface TurnEnd {
  turnId: string
  sessionId: string
  outcome: TurnOutcome
  error?: SerializedError
}

/** What a transition's transaction writes besides the dirty rows: the log row and the turn row. */
export type TransitionTx = Pick<Store, 'transitions' | 'turns'>

/**
 * What the recorder needs of its turn: the write queue, the part writer (dirty rows committed
 * with each transition, touched ids named in the row), the messages its end closes, and the
 * redactor. The turn's scope is one; a test can pass a small fake.
 */
export interface RecorderScope {
  readonly turnId: string
  readonly sessionId: string
  readonly queue: { run<T>(job: () => Promise<T>): Promise<T> }
  readonly config: { readonly redactor: Pick<Redactor, 'value' | 'text'> }
  /** The tool parts of the last step (an approval request names them). */
  readonly stepTools: readonly ToolPart[]
  assistantMessage(): MessageWithParts
  assistantMessages(): MessageWithParts[]
  readonly writer: {
    takeTouched(): string[]
    commit(more: (tx: TransitionTx) => Promise<void>, options: { fencedByMore: boolean }): Promise<void>
    changed(part: Part): void
    message(info: MessageInfo): void
    seal(): void
  }
}

export interface RecorderOptions {
  turnId: string
  sessionId: string
  scope: RecorderScope
  bus: Pick<Bus, 'publish'>
  fence: TurnFence
  /** A restored turn (recovery): its snapshot and the seq of its last logged transition. */
  restored?: { snapshot: TurnSnapshot; seq: number }
}

/** A queued write that was dropped because the turn failed or stopped before it ran. */
class Skipped {}

/** A transition recorded and not written yet (its row is numbered when written). */
interface PendingRow {
  event: AnyEventObject
  to: string
  context: TurnContext
}

/** The tag of the chart's states that act on nothing outside the turn: their rows ride with the next row's commit. */
export const effectFreeTag = 'effect-free'

export class TransitionRecorder {
  readonly #options: RecorderOptions
  readonly #failed = deferred<SerializedError>()
  readonly #lostTo = deferred<TurnOwnershipLostError>()
  readonly #ended = deferred<TurnEnd>()
  /** Settles with the record of the first failed write: the turn must fail (its runner sends `turn.fail`). */
  readonly failed: Promise<SerializedError> = this.#failed.promise
  /** Settles when a write found the turn owned by another engine: the turn stops here, writing nothing more. */
  readonly lost: Promise<TurnOwnershipLostError> = this.#lostTo.promise
  /** Settles when the turn's last row is written (or could not be, and the turn is left for recovery). */
  readonly ended: Promise<TurnEnd> = this.#ended.promise
  /** In memory: the state and context of the last snapshot recorded. */
  #previous: string
  #previousContext: unknown
  /** In the database: the last committed row. */
  #committed: { state: string; seq: number }
  /** Settles when every write queued so far has settled. */
  #tail: Promise<void> = Promise.resolve()
  /** Set by the first failed write: the turn fails, only its final row is written. */
  #failure: SerializedError | null = null
  /** No more rows recorded: the turn was detached (close); writes already queued still run. */
  #detached = false
  /** Another engine owns the turn: nothing more is written, queued writes are dropped. */
  #lost = false
  #final = false
  /** True while `writeAhead` sends the turn's first event: the rows it makes are written in the prompt's transaction. */
  #aheadOpen = false
  /** Settles when the first rows are known: the first row that is not held was recorded (or none will be). */
  #aheadClosed = deferred<void>()
  /** Those rows, from `record` until they are published; `done` settles when their transaction did. */
  #ahead: { pending: PendingRow[]; rows: TransitionRecord[]; context: TurnContext; done: ReturnType<typeof deferred<void>> } | null = null
  /** Rows into effect-free states, held until the next row: written in its transaction. */
  #held: PendingRow[] = []
  /** The write of that row failed inside the prompt's transaction (see `aheadAlone`). */
  #aheadWriteFailed = false

  constructor(options: RecorderOptions) {
    this.#options = options
    this.#previous = options.restored ? turnStateName(options.restored.snapshot) : 'idle'
    this.#previousContext = options.restored?.snapshot.context
    this.#committed = { state: this.#previous, seq: options.restored?.seq ?? 0 }
  }

  /** True once the final transition was recorded (its write may still be in flight). */
  get ending(): boolean {
    return this.#final
  }

  /** True once the turn leaves this engine without an end: detached (close) or lost to another engine. */
  get leaving(): boolean {
    return this.#detached || this.#lost
  }

  /**
   * Resolves when every transition recorded so far is committed: true when the turn may act
   * (start a state's actors), false when a write failed or the turn stopped. Call it when an
   * actor starts: XState starts a state's actors before it reports the snapshot that entered
   * the state, so this yields once before reading the queue.
   *
   * @example
   * if (!(await recorder.committed())) return // the entering row never committed: do nothing
   */
  async committed(): Promise<boolean> {
    await Promise.resolve()
    await this.#tail
    return this.#failure === null && !this.#detached && !this.#lost
  }

  /** Resolves when every write queued so far has settled. */
  settled(): Promise<void> {
    return this.#tail
  }

  /** No more rows from this recorder (the turn leaves this engine at close); writes already queued still run. */
  detach(): void {
    this.#detached = true
    this.#held = []
    this.#aheadClosed.resolve()
  }

  /** A write outside a transition (a part flush) failed: fail the turn, as a failed row does. */
  writeFailed(cause: unknown): void {
    if (TurnOwnershipLostError.isInstance(cause)) return this.#lose(cause)
    if (this.#failure || this.#detached || this.#lost || this.#final) return
    this.#failure = new StorageError('writing parts', cause).toJSON()
    this.#reportFailure()
  }

  /**
   * Sends the turn's first event (`send`) inside the transaction that stores the prompt, and
   * writes the row it records in that transaction (`tx`): the prompt's commit is the row's, so
   * the model call waits for no commit of its own. Then, inside the same write-queue job,
   * `aheadCommitted()` (or `aheadFailed()` when the transaction rolled back: the turn's actors
   * do nothing), and `aheadPublished()` once the prompt's own events are out.
   */
  async writeAhead(tx: TransitionTx, send: () => void): Promise<void> {
    this.#aheadOpen = true
    try {
      send()
      // The first state is effect-free (the step gate): its verdict, the next row, is written here too.
      if (this.#held.length > 0) await this.#aheadClosed.promise
    } finally {
      this.#aheadOpen = false
    }
    const ahead = this.#ahead
    if (!ahead) return
    const { rows, context } = ahead
    try {
      await writeRows(tx, this.#options, rows, context, null)
    } catch (error) {
      this.#aheadWriteFailed = true
      throw error
    }
  }

  /** True when the prompt's transaction failed on the first row's own write (not on the prompt's). */
  get aheadWriteFailed(): boolean {
    return this.#aheadWriteFailed
  }

  /**
   * The first row could not be written with the prompt (its write failed, the prompt was then
   * stored without it): it is written on its own, as every later row is, and its failure fails
   * the turn as theirs does. The state's actors wait for it.
   */
  aheadAlone(): void {
    const ahead = this.#ahead
    if (!ahead) return
    this.#ahead = null
    this.#aheadWriteFailed = false
    this.#queue(ahead.pending, false, false)
    void this.#tail.then(() => ahead.done.resolve())
  }

  /** The transaction of `writeAhead` committed: its row is the log's, the state's actors may act. */
  aheadCommitted(): void {
    const ahead = this.#ahead
    if (!ahead) return
    const last = ahead.rows.at(-1)!
    this.#committed = { state: last.to, seq: last.seq }
    ahead.done.resolve()
  }

  /** The transaction of `writeAhead` rolled back: the turn did not start, its actors do nothing. */
  aheadFailed(): void {
    const ahead = this.#ahead
    if (!ahead) return
    this.#ahead = null
    this.#detached = true
    ahead.done.resolve()
  }

  /** After the prompt's events: the first row's transition and status, as a write of its own publishes them. */
  aheadPublished(): void {
    const ahead = this.#ahead
    if (!ahead) return
    this.#ahead = null
    this.#publish(ahead.rows, ahead.context, null)
  }

  /**
   * Called with each snapshot of the turn's actor and the event that produced it. A snapshot
   * whose state and context did not change writes nothing.
   *
   * @example
   * createActor(turnChart, { inspect: transitionsTo(recorder) }) // every transition of the root actor is recorded
   */
  record(event: AnyEventObject, snapshot: TurnSnapshot): void {
    if (this.#final || this.#detached || this.#lost) return
    if (event.type === 'xstate.init') {
      this.#previousContext = snapshot.context
      return
    }
    const stopped = snapshot.status === 'stopped' && event.type === 'xstate.stop'
    const to = stopped ? 'aborted' : turnStateName(snapshot)
    // A transition is a row when the state or the context changed (an approval changes only context).
    if (to === this.#previous && snapshot.context === this.#previousContext) return
    this.#previousContext = snapshot.context
    this.#previous = to
    const final = finalStates.has(to)
    const row: PendingRow = { event, to, context: snapshot.context }
    // A state that acts on nothing outside the turn: its row waits for the next one's transaction.
    if (!final && !stopped && snapshot.hasTag(effectFreeTag)) {
      this.#held.push(row)
      return
    }
    const pending = [...this.#held.splice(0), row]
    if (this.#aheadOpen && !final && this.#committed.seq === 0 && !this.#ahead) {
      // The first rows, written by `writeAhead` in the prompt's transaction; the actors wait for its commit.
      const done = deferred<void>()
      this.#ahead = { pending, rows: this.#rowsOf(pending, Date.now(), []), context: snapshot.context, done }
      this.#tail = done.promise
      this.#aheadClosed.resolve()
      return
    }
    if (final) this.#final = true
    this.#queue(pending, stopped, final)
    this.#aheadClosed.resolve()
  }

  /** The log rows of `pending`, numbered after the last committed row; the last one names the parts touched. */
  #rowsOf(pending: PendingRow[], time: number, parts: string[]): TransitionRecord[] {
    let { state: from, seq } = this.#committed
    return pending.map(({ event, to }, i) => {
      const row: TransitionRecord = {
        turnId: this.#options.turnId,
        seq: ++seq,
        from,
        event: event.type,
        to,
        // Control data, but a step's error rides in it: no credential goes into the log.
        payload: this.#options.scope.config.redactor.value(eventPayload(event)),
        time,
        ...(parts.length && i === pending.length - 1 ? { parts } : {}),
      }
      from = to
      return row
    })
  }

  /** Queues the write of transitions (held rows, then the one recorded); `#tail` settles when it did, its events follow its commit. */
  #queue(pending: PendingRow[], stopped: boolean, final: boolean): void {
    const last = pending.at(-1)!
    const write = this.#options.scope.queue.run(() => this.#write(pending, stopped))
    this.#tail = write.then(
      () => undefined,
      () => undefined,
    )
    write.then(
      (written) => this.#publish(written.rows, last.context, written.error),
      (cause) => {
        if (cause instanceof Skipped) return
        if (TurnOwnershipLostError.isInstance(cause)) return this.#lose(cause)
        if (final) return this.#endedUnwritten(new StorageError(`recording the transition to ${last.to}`, cause).toJSON())
        this.#reportFailure()
      },
    )
  }

  /** The queued write of transitions, in one transaction; runs after every earlier write of the turn. */
  async #write(pending: PendingRow[], stopped: boolean): Promise<{ rows: TransitionRecord[]; error: SerializedError | null }> {
    const { to, context } = pending.at(-1)!
    const final = finalStates.has(to)
    if (this.#lost) throw new Skipped() // nothing more is written
    if (this.#failure && !final) throw new Skipped() // after a failed write, only the final row
    const rows = this.#rowsOf(pending, Date.now(), this.#options.scope.writer.takeTouched())
    const row = rows.at(-1)!
    if (this.#failure) return this.#writeFailed(row, context, this.#failure)
    // Last net before the rows and events: the engine's secrets removed from whatever error got here
    // (a replaced errorClassifier included).
    const error: SerializedError | null = stopped ? new MessageAbortedError().toJSON() : this.#options.scope.config.redactor.value(context.error)
    try {
      await this.#commit(rows, context, final ? error : null)
      return { rows, error: final ? error : null }
    } catch (cause) {
      if (TurnOwnershipLostError.isInstance(cause)) throw cause
      // Set before the write settles, so that `committed()` already sees it.
      this.#failure ??= new StorageError(`recording the transition to ${to}`, cause).toJSON()
      // A final row that failed (completed, aborted) is replaced by the failure's own row.
      if (final && this.#failsFrom(this.#committed.state)) return this.#writeFailed(row, context, this.#failure)
      throw cause
    }
  }

  /** The final row of a failed turn: it leaves the last committed state, so the log replays. */
  async #writeFailed(row: TransitionRecord, context: TurnContext, error: SerializedError): Promise<{ rows: TransitionRecord[]; error: SerializedError }> {
    if (!this.#failsFrom(this.#committed.state)) throw new Error(`no failure row from '${this.#committed.state}'`)
    // (held rows before it are dropped: the failure leaves the last committed state)
    const failed: TransitionRecord = { ...row, seq: this.#committed.seq + 1, from: this.#committed.state, event: 'turn.fail', payload: { error }, to: 'failed' }
    await this.#commit([failed], context, error)
    return { rows: [failed], error }
  }

  /** States whose `turn.fail` the chart takes (an interrupted turn is left for recovery instead). */
  #failsFrom(state: string): boolean {
    return state !== 'interrupted' && !finalStates.has(state)
  }

  async #commit(rows: TransitionRecord[], context: TurnContext, error: SerializedError | null): Promise<void> {
    const { scope } = this.#options
    const last = rows.at(-1)!
    const final = finalStates.has(last.to)
    if (final) closeTurn(scope, last.to as TurnOutcome, error, last.time)
    // The fenced update first: a turn another engine took over (and logged further) fails
    // here as lost, not on the seq it already wrote.
    await scope.writer.commit((tx) => writeRows(tx, this.#options, rows, context, final ? error : null), { fencedByMore: true })
    this.#committed = { state: last.to, seq: last.seq }
  }

  /** Another engine owns the turn (a lease renewal found it so): stop, writing nothing more. */
  lose(error: TurnOwnershipLostError): void {
    this.#lose(error)
  }

  #reportFailure(): void {
    if (!this.#failure || this.#lost) return
    this.#failed.resolve(this.#failure)
  }

  #lose(error: TurnOwnershipLostError): void {
    if (this.#lost) return
    this.#lost = true
    this.#held = []
    this.#aheadClosed.resolve()
    this.#lostTo.resolve(error)
  }

  /** The final row could not be written: the turn ends here, and its row is left for recovery. */
  #endedUnwritten(failure: SerializedError): void {
    const { bus, turnId, sessionId } = this.#options
    const error = { ...failure, message: `${failure.message} (the turn's row stays open; recovery ends or resumes it)` }
    bus.publish({ type: 'session.error', sessionId, turnId, error })
    bus.publish({ type: 'session.status', sessionId, status: { type: 'idle' } })
    this.#ended.resolve({ turnId, sessionId, outcome: 'failed', error })
  }

  /** After the commit: the transitions, the status, and at the end the error and the result. */
  #publish(rows: TransitionRecord[], context: TurnContext, error: SerializedError | null): void {
    const { bus, scope, turnId, sessionId } = this.#options
    for (const row of rows) bus.publish({ type: 'turn.transition', sessionId, turnId, seq: row.seq, from: row.from, event: row.event, to: row.to, time: row.time })
    const row = rows.at(-1)!
    if (!finalStates.has(row.to)) {
      const status: SessionStatus =
        retryWaitStates.has(row.to)
          ? { type: 'retry', turnId, attempt: context.attempt, message: scope.config.redactor.text(context.error?.message ?? 'retrying'), next: row.time + context.retryDelayMs }
          : { type: 'busy', turnId, state: row.to }
      bus.publish({ type: 'session.status', sessionId, status })
      if (row.to === 'awaiting-approval' && row.from !== 'awaiting-approval') publishApprovalRequest(bus, scope, context.pendingApprovals)
      return
    }
    if (error) bus.publish({ type: 'session.error', sessionId, turnId, error })
    bus.publish({ type: 'session.status', sessionId, status: { type: 'idle' } })
    this.#ended.resolve({ turnId, sessionId, outcome: row.to as TurnOutcome, ...(error ? { error } : {}) })
  }
}

/**
 * The inspector that tells `recorder` of each snapshot of the turn's own actor and the event
 * that made it (the root actor's: its children, the step, tools and compaction, are not
 * recorded), through XState's documented interception point: an `@xstate.snapshot` inspection
 * event carries both (https://stately.ai/docs/inspection). XState reports a snapshot after it
 * started the entered state's actors, in the same synchronous call; each of them waits for the
 * state's row (`committed()` yields once before reading the queue), so none acts before its
 * row is recorded and written.
 *
 * @example
 * const actor = createActor(turnChart, { input, inspect: transitionsTo(recorder) }) // every transition of the root actor is recorded
 */
export function transitionsTo(recorder: Pick<TransitionRecorder, 'record'>): (event: InspectionEvent) => void {
  return (inspection) => {
    if (inspection.type !== '@xstate.snapshot' || inspection.actorRef.sessionId !== inspection.rootId) return
    recorder.record(inspection.event, inspection.snapshot as TurnSnapshot)
  }
}

/** Writes transition rows and the turn row (the last row's state) in `tx`, fenced on the turn's owner. */
function writeRows(tx: TransitionTx, options: Pick<RecorderOptions, 'fence'>, rows: TransitionRecord[], context: TurnContext, error: SerializedError | null): Promise<void> {
  const last = rows.at(-1)!
  return writeLogRows(tx, options.fence, rows, { step: context.step, attempt: context.attempt, retryAt: retryAtOf(last.to, last.time, context.retryDelayMs), error })
}

/** Publishes the calls of a turn in `awaiting-approval` (on entry, and again when another engine resumes the wait). */
export function publishApprovalRequest(bus: Pick<Bus, 'publish'>, scope: Pick<RecorderScope, 'stepTools' | 'sessionId' | 'turnId'>, pending: readonly string[]): void {
  const calls = scope.stepTools
    .filter((p) => pending.includes(p.callId))
    .map((p) => ({ callId: p.callId, tool: p.tool, input: p.state.input }))
  bus.publish({ type: 'approval.requested', sessionId: scope.sessionId, turnId: scope.turnId, calls })
}

/**
 * The end of a turn, whatever its outcome: open text closed, tools that had not finished
 * marked (aborted, or not run because the turn failed), the assistant message completed and
 * given the error.
 */
function closeTurn(scope: RecorderScope, outcome: TurnOutcome, error: SerializedError | null, now: number): void {
  const message = scope.assistantMessage()
  const reason: NotRunReason = outcome === 'failed' ? { kind: 'turn-failed', ...(error ? { errorName: error.name } : {}) } : { kind: 'aborted' }
  for (const assistant of scope.assistantMessages()) {
    // Run twice when a final row failed and the failure's row replaces it: what the first run
    // closed at `now` gets the second run's reason (the writer is sealed by then, but the
    // rolled-back write left these very objects dirty).
    for (const part of closeOpenWork(assistant.parts, reason, now)) scope.writer.changed(part)
    assistant.info.time.completed ??= now
  }
  if (outcome !== 'completed' && error) message.info.error = error
  for (const assistant of scope.assistantMessages()) scope.writer.message(assistant.info)
  scope.writer.seal()
}

/** The event's payload without its type; errors serialised (control data only). */
function eventPayload(event: AnyEventObject): Record<string, unknown> {
  const { type: _type, ...rest } = event
  if ('error' in rest && rest.error instanceof Error) rest.error = serializeError(rest.error)
  if ('output' in rest && rest.output === undefined) delete rest.output
  return rest
}
