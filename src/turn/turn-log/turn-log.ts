/**
 * The turn log: the one writer of a turn's progress, the gate of its effects, and the one place
 * where its end is decided.
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
 * prompt's transaction (`writeFirstRowIn` waits for the row that leaves the effect-free state).
 *
 * A failed write fails the turn: nothing but the final row is written after it, and that row
 * leaves the last committed state (`<committed> --turn.fail--> failed`), so the log always
 * replays. A write that finds the turn owned by another engine ends the turn here at once.
 *
 * The log's lifecycle is `#state`: `open` → (`failing`) → `ending` (the final row recorded, its
 * write in flight) → `ended`; or `detached` (the engine closes: queued writes land) → `ended`;
 * or `ended` at once (lost, not started). `end(…)` is the one place a turn's end is decided;
 * `ended` settles with it, once, and the handle reports it.
 */
import type { AnyEventObject, InspectionEvent, SnapshotFrom } from 'xstate'
import { crashedState, isFinalState, turnStateName, waitOf, type TurnMachine } from '../../../machines/turn.machine'
import type { TurnContext, TurnStall } from '../../../machines/turn.types'
import type { Bus } from '../../core/bus'
import { deferred } from '../../core/deferred'
import { BudgetExceededError, MessageAbortedError, StorageError, TurnOwnershipLostError, type SerializedError } from '../../core/errors'
import type { Redactor } from '../../core/secrets/redact-secrets'
import type { MessageInfo, Part, ToolPart, TransitionRecord, TurnUsage } from '../../core/types'
import type { TurnFence } from '../../store/store'
import type { ToolSet } from 'ai'
import { usageOfMessages } from '../../core/usage'
import { withStorageWaits, writePlan, type LogTx } from './log-rows'
import type { StorageWaitLog, WaitsToWrite } from './storage-wait-log'
import { planRows, type RowPlan } from './row-plan'
import type { RiddenWrite } from '../run-tree/run-tree'
import { closeTurn, leavesForRecovery, type ClosingScope, type TurnEnd } from './turn-end'
import { publishEnd, publishRows } from './turn-events'
import { deadlineOfWait } from '../../chart/awaited-calls'

type TurnSnapshot = SnapshotFrom<TurnMachine>

/** The tag of the chart's states that act on nothing outside the turn: their rows ride with the next row's commit. */
export const effectFreeTag = 'effect-free'

/**
 * What the log needs of its turn: the write queue, the part writer (dirty rows committed with
 * each transition, touched ids named in the row), the messages its end closes, and the
 * redactor. The turn's scope is one; a test can pass a small fake.
 */
export interface TurnLogScope {
  readonly turnId: string
  readonly sessionId: string
  readonly queue: { run<T>(job: () => Promise<T>): Promise<T> }
  /** `tools`: which calls are idempotent (a failed write while a non-idempotent call may have run leaves the turn for recovery). */
  readonly config: { readonly redactor: Pick<Redactor, 'value' | 'text'>; readonly tools?: ToolSet }
  readonly messages: ClosingScope['messages'] & {
    /** The tool parts of the last step (an approval request names them). */
    readonly stepTools: readonly ToolPart[]
    /** Every message of the turn (a final row carries the usage they add up to). */
    readonly all: ReadonlyArray<{ readonly info: MessageInfo }>
  }
  /** The outages waited out, carried by the next row written. */
  readonly outages: { readonly waits: Pick<StorageWaitLog, 'toWrite'> }
  readonly writer: {
    takeTouched(): string[]
    commit(more: (tx: LogTx) => Promise<void>, options: { fencedByMore: boolean; operation: string }): Promise<void>
    flush(): Promise<void>
    changed(part: Part): void
    message(info: MessageInfo): void
    seal(): void
  }
}

export interface TurnLogOptions {
  scope: TurnLogScope
  bus: Pick<Bus, 'publish'>
  fence: TurnFence
  /** A restored turn (recovery): its snapshot and the seq of its last logged transition. */
  restored?: { snapshot: TurnSnapshot; seq: number }
  /**
   * A write that rides in each transaction of the turn's rows (its run tree's spending: a model
   * call reserved with the row into the state that makes it), put back when that transaction
   * rolls back. No commit of its own.
   */
  rider?: () => RiddenWrite | undefined
}

/**
 * Runs the transaction that stores a prompt; `write`, when given, runs last inside it (the
 * turn's first rows). See `TurnLog.writeFirstRowIn`.
 */
export type PromptTransaction = (write?: (tx: LogTx) => Promise<void>) => Promise<void>

/** Stores a prompt with the turn's first rows (`TurnLog.writeFirstRowIn` with the first event); resolves with what publishes them. */
export type FirstRowWriter = (transaction: PromptTransaction) => Promise<() => void>

/** Where the log is in its lifecycle (see the module's comment). */
type LogState =
  | { kind: 'open' }
  /** A write failed: the turn fails, only its final row is written. */
  | { kind: 'failing'; failure: SerializedError }
  /** The final row is recorded; its write is in flight (`failure`: a write failed before or during it). */
  | { kind: 'ending'; failure: SerializedError | null }
  /** The turn leaves this engine at close: nothing more is recorded, writes already queued still run (after a failure, none but a final row). */
  | { kind: 'detached'; failure: SerializedError | null }
  | { kind: 'ended'; end: TurnEnd }

/** A queued write that was dropped because the turn failed or ended before it ran. */
class Skipped {}

/** A transition recorded and not written yet (its row is numbered when written). */
interface PendingRow {
  event: AnyEventObject
  to: string
  context: TurnContext
}

/** The first rows, sent and written inside the prompt's transaction (`writeFirstRowIn`). */
interface FirstRows {
  /** True while the first event is sent: the rows it makes are the first rows. */
  sending: boolean
  /** Settles when the first rows are known: the first row that is not held was recorded (or none will be). */
  readonly known: ReturnType<typeof deferred<void>>
  /** Those rows, once recorded, and their plan. */
  pending?: PendingRow[]
  plan?: RowPlan
  /** Settles when their transaction did (or their own write did): the state's actors wait for it. */
  readonly done: ReturnType<typeof deferred<void>>
}

export class TurnLog {
  readonly #options: TurnLogOptions
  readonly #turnId: string
  readonly #sessionId: string
  readonly #failed = deferred<SerializedError>()
  readonly #ended = deferred<TurnEnd>()
  /** A loss heard while the turn was leaving (detached): its end once the leaving is done, unless its row was handed over. */
  #lostWhileLeaving: TurnOwnershipLostError | undefined
  /** Settles with the record of the first failed write: the turn must fail (its runner sends `turn.fail`). */
  readonly failed: Promise<SerializedError> = this.#failed.promise
  /** Settles once with the turn's end (see `TurnEnd`), whichever way it ends. */
  readonly ended: Promise<TurnEnd> = this.#ended.promise
  #state: LogState = { kind: 'open' }
  /** In memory: the state and context of the last snapshot recorded. */
  #previous: string
  #previousContext: unknown
  /** In the database: the last committed row. */
  #committed: { state: string; seq: number }
  /** Settles when every write queued so far has settled. */
  #tail: Promise<void> = Promise.resolve()
  /** Rows into effect-free states, held until the next row: written in its transaction. */
  #held: PendingRow[] = []
  #first: FirstRows | null = null

  constructor(options: TurnLogOptions) {
    this.#options = options
    this.#turnId = options.scope.turnId
    this.#sessionId = options.scope.sessionId
    this.#previous = options.restored ? turnStateName(options.restored.snapshot) : 'idle'
    this.#previousContext = options.restored?.snapshot.context
    this.#committed = { state: this.#previous, seq: options.restored?.seq ?? 0 }
  }

  /** True once the final transition was recorded (its write may still be in flight), or the turn ended. */
  get ending(): boolean {
    return this.#state.kind === 'ending' || this.#state.kind === 'ended'
  }

  /** True once the turn leaves this engine without an end: detached (close), lost to another engine, or stalled. */
  get leaving(): boolean {
    const state = this.#state
    return state.kind === 'detached' || (state.kind === 'ended' && (state.end.kind === 'lost' || state.end.kind === 'stalled' || state.end.kind === 'detached' || state.end.kind === 'parked'))
  }

  /**
   * Resolves when every transition recorded so far is committed: true when the turn may act
   * (start a state's actors), false when a write failed or the turn stopped. Call it when an
   * actor starts: XState starts a state's actors before it reports the snapshot that entered
   * the state, so this yields once before reading the queue.
   *
   * @example
   * if (!(await log.committed())) return // the entering row never committed: do nothing
   */
  async committed(): Promise<boolean> {
    await Promise.resolve()
    await this.#tail
    const state = this.#state
    return state.kind === 'open' || (state.kind === 'ending' && state.failure === null)
  }

  /** Resolves when every write queued so far has settled. */
  settled(): Promise<void> {
    return this.#tail
  }

  /**
   * Sends the turn's first event (`send`) inside the transaction that stores the prompt
   * (`transaction`), and writes the rows it records there: the prompt's commit is the rows', so
   * the model call waits for no commit of its own. When the rows' own write fails, the prompt
   * is stored without them and they are written on their own, as every later row is (their
   * failure then fails the turn). Rejects when the prompt could not be stored: the turn ends
   * as not started. Resolves with what publishes the rows' transition and status; call it
   * after the prompt's own events.
   *
   * @example
   * const publish = await log.writeFirstRowIn((write) => store.transaction(async (tx) => { ...; await write?.(tx) }), () => actor.send({ type: 'turn.start' }))
   */
  async writeFirstRowIn(transaction: PromptTransaction, send: () => void): Promise<() => void> {
    const first: FirstRows = (this.#first = { sending: false, known: deferred<void>(), done: deferred<void>() })
    let ownWriteFailed = false
    let ridden: RiddenWrite | undefined
    const write = async (tx: LogTx) => {
      first.sending = true
      try {
        send()
        // The first state is effect-free (the step gate): its verdict, the next row, is written here too.
        if (this.#held.length > 0) await first.known.promise
      } finally {
        first.sending = false
      }
      if (!first.plan) return
      try {
        await writePlan(tx, this.#options.fence, first.plan)
        ridden = this.#options.rider?.()
        await ridden?.write(tx)
      } catch (error) {
        ownWriteFailed = true
        throw error
      }
    }
    try {
      await transaction(write)
      const last = first.plan?.rows.at(-1)
      if (last) this.#committed = { state: last.to, seq: last.seq }
      first.done.resolve()
    } catch (error) {
      ridden?.rolledBack()
      if (!ownWriteFailed || !first.pending) return this.#notStored(first, error)
      // The rows' own write failed: the prompt is stored without them, and they are written on their own.
      await transaction().catch((again: unknown) => this.#notStored(first, again))
      const pending = first.pending
      this.#first = null
      this.#queue(pending, false, false)
      void this.#tail.then(() => first.done.resolve())
      return () => undefined // (published after their own write)
    }
    return () => {
      this.#first = null
      if (first.plan && first.pending) this.#publish(first.plan.rows, first.pending.at(-1)!.context, null)
    }
  }

  /** The prompt's transaction rolled back: nothing was written, the turn's actors do nothing. */
  #notStored(first: FirstRows, error: unknown): never {
    this.#first = null
    this.end({ kind: 'not-started', error })
    first.done.resolve()
    throw error
  }

  /** A write outside a transition (a part flush) failed: fail the turn, as a failed row does. */
  writeFailed(cause: unknown): void {
    if (TurnOwnershipLostError.isInstance(cause)) return this.end({ kind: 'lost', error: cause })
    if (this.#state.kind !== 'open') return
    if (this.#leavesForRecovery()) return this.#endUnwritten(new StorageError('writing parts', cause).toJSON())
    this.#fail(new StorageError('writing parts', cause).toJSON())
  }

  /** The turn ends without a final row, its calls' outcome in doubt (`leavesForRecovery`, turn-end.ts). */
  #leavesForRecovery(): boolean {
    const { scope } = this.#options
    return leavesForRecovery(this.#committed.state, scope.messages.stepTools, scope.config.tools ?? {})
  }

  /**
   * Called with each snapshot of the turn's actor and the event that produced it. A snapshot
   * whose state and context did not change writes nothing.
   *
   * @example
   * createActor(chart.machine, { inspect: transitionsTo(log) }) // every transition of the root actor is recorded
   */
  record(event: AnyEventObject, snapshot: TurnSnapshot): void {
    const state = this.#state
    if (state.kind !== 'open' && state.kind !== 'failing') return
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
    const final = isFinalState(to)
    const row: PendingRow = { event, to, context: snapshot.context }
    // A state that acts on nothing outside the turn: its row waits for the next one's transaction.
    if (!final && !stopped && snapshot.hasTag(effectFreeTag)) {
      this.#held.push(row)
      return
    }
    const pending = this.#held.length === 0 ? [row] : [...this.#held.splice(0), row]
    const first = this.#first
    if (first?.sending && !final && this.#committed.seq === 0 && !first.pending) {
      // The first rows, written in the prompt's transaction; the actors wait for its commit.
      first.pending = pending
      first.plan = this.#plan(pending, Date.now(), [], null)
      this.#tail = first.done.promise
      first.known.resolve()
      return
    }
    if (final) this.#state = { kind: 'ending', failure: state.kind === 'failing' ? state.failure : null }
    this.#queue(pending, stopped, final)
    first?.known.resolve()
  }

  /** The rows of `pending` after the last committed row, and the turn row they leave (the row planner); the last row names the parts touched. */
  #plan(pending: PendingRow[], time: number, parts: string[], error: SerializedError | null): RowPlan {
    const { scope } = this.#options
    const redact = (payload: Record<string, unknown>) => scope.config.redactor.value(payload)
    // (the step's parts are read for a deadline only by a row into a waiting state)
    const last = pending.at(-1)!
    const wait = waitOf(last.to)
    const waiting = wait ? { waitDeadline: deadlineOfWait(wait.awaits, { stepTools: scope.messages.stepTools, context: last.context }) } : {}
    return planRows({ turnId: this.#turnId, after: this.#committed, time, parts, error, redact, ...waiting }, pending)
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
        if (TurnOwnershipLostError.isInstance(cause)) return this.end({ kind: 'lost', error: cause })
        if (final) return this.#endUnwritten(new StorageError(`recording the transition to ${last.to}`, cause).toJSON())
        this.#reportFailure()
      },
    )
  }

  /** The failure the turn is failing with, if any. */
  #failure(): SerializedError | null {
    const state = this.#state
    return state.kind === 'failing' || state.kind === 'ending' || state.kind === 'detached' ? state.failure : null
  }

  /** The queued write of transitions, in one transaction; runs after every earlier write of the turn. */
  async #write(pending: PendingRow[], stopped: boolean): Promise<{ rows: TransitionRecord[]; error: SerializedError | null }> {
    const { to, context } = pending.at(-1)!
    const final = isFinalState(to)
    if (this.#state.kind === 'ended') throw new Skipped() // lost, or ended otherwise: nothing more is written
    const failure = this.#failure()
    if (failure && !final) throw new Skipped() // after a failed write, only the final row
    const time = Date.now()
    const parts = this.#options.scope.writer.takeTouched()
    if (failure) return this.#writeFailed(pending.at(-1)!, time, parts, failure)
    // Last net before the rows and events: the engine's secrets removed from whatever error got here
    // (a replaced errorClassifier included).
    const error: SerializedError | null = !final ? null : stopped ? new MessageAbortedError().toJSON() : this.#options.scope.config.redactor.value(context.error)
    const plan = this.#plan(pending, time, parts, error)
    try {
      await this.#commit(plan)
      return { rows: plan.rows, error }
    } catch (cause) {
      if (TurnOwnershipLostError.isInstance(cause)) throw cause
      // (a budget spent is known, not a write in doubt: the turn fails, its parts written with the failure row)
      if (!final && !BudgetExceededError.isInstance(cause) && this.#leavesForRecovery()) {
        this.#endUnwritten(new StorageError(`recording the transition to ${to}`, cause).toJSON())
        throw new Skipped()
      }
      // Set before the write settles, so that `committed()` already sees it. (A budget the
      // transaction's reservation found spent is why the turn fails: the call was not made.)
      const failure = BudgetExceededError.isInstance(cause) ? cause.toJSON() : new StorageError(`recording the transition to ${to}`, cause).toJSON()
      const failed = this.#fail(failure, false)
      // A final row that failed (completed, aborted) is replaced by the failure's own row.
      if (final && failed && this.#failsFrom(this.#committed.state)) return this.#writeFailed(pending.at(-1)!, time, parts, failed)
      throw cause
    }
  }

  /** The final row of a failed turn, instead of `last` (and the held rows before it): it leaves the last committed state, so the log replays. */
  async #writeFailed(last: PendingRow, time: number, parts: string[], error: SerializedError): Promise<{ rows: TransitionRecord[]; error: SerializedError }> {
    if (!this.#failsFrom(this.#committed.state)) throw new Error(`no failure row from '${this.#committed.state}'`)
    const plan = this.#plan([{ event: { type: 'turn.fail', error }, to: 'failed', context: last.context }], time, parts, error)
    await this.#commit(plan)
    return { rows: plan.rows, error }
  }

  /** States whose `turn.fail` the chart takes (an interrupted turn is left for recovery instead). */
  #failsFrom(state: string): boolean {
    return state !== crashedState && !isFinalState(state)
  }

  /** Writes a plan with the parts changed since the last row (and the spending that rides with it); a final one closes the turn's messages first. */
  async #commit(plan: RowPlan): Promise<void> {
    const { scope, fence } = this.#options
    const last = plan.rows.at(-1)!
    const { error } = plan.turn
    let usage: TurnUsage | undefined
    if (plan.turn.outcome) {
      closeTurn(scope, plan.turn.outcome, error, last.time)
      // After the final row's changes: later ones (a tool that ignores its abort signal) are dropped.
      scope.writer.seal()
      // Written on the turn row by the final row's update (no statement of its own): the closed messages are final.
      usage = usageOfMessages(scope.turnId, scope.messages.all.map((m) => m.info))
    }
    // (a failure's final row carries no spending: it must be writable when the spending's write is what failed)
    const ridden = error ? undefined : this.#options.rider?.()
    let tried = false
    let waits: WaitsToWrite | undefined
    const once = async (tx: LogTx) => {
      // Tried again after a failure that passes: the commit lost with its connection may have
      // gone through, and then its rows are there (read once per outage, so the whole log will do).
      if (tried && (await tx.transitions.list(plan.turnId)).some((row) => row.seq === last.seq)) return
      tried = true
      waits = scope.outages.waits.toWrite(Date.now())
      await writePlan(tx, fence, withStorageWaits(usage ? { ...plan, turn: { ...plan.turn, usage } } : plan, waits.waits))
      await ridden?.write(tx)
    }
    try {
      await scope.writer.commit(once, { fencedByMore: true, operation: `recording the transition to ${last.to}` })
    } catch (cause) {
      ridden?.rolledBack()
      throw cause
    }
    waits?.written()
    this.#committed = { state: last.to, seq: last.seq }
  }

  /**
   * The turn fails with `failure` (kept as the first one): only its final row is written from
   * now. Returns the failure the turn fails with, or null when it is not failing (detached,
   * ended). `report`: tell the runner now (it sends `turn.fail`).
   */
  #fail(failure: SerializedError, report = true): SerializedError | null {
    const state = this.#state
    if (state.kind === 'open') this.#state = { kind: 'failing', failure }
    else if (state.kind === 'ending' && !state.failure) this.#state = { kind: 'ending', failure }
    if (report) this.#reportFailure()
    return this.#failure()
  }

  #reportFailure(): void {
    const state = this.#state
    if (state.kind === 'failing') this.#failed.resolve(state.failure)
  }

  /**
   * Its engine found the turn stalled (stall-watch.ts): it ends here, writing nothing more (a
   * write that hangs may still land; the claim that lets the turn go fences any later one out).
   * A final row in flight is what stalled too: its end is the stall's, as the row's fate is unknown.
   */
  stall(stall: TurnStall): void {
    if (this.#state.kind !== 'ended') this.end({ kind: 'stalled', ...stall })
  }

  /**
   * A lease renewal found the turn owned by another engine: the turn ends here, writing nothing
   * more; unless its final row is being written already (that write's fence decides).
   */
  lose(error: TurnOwnershipLostError): void {
    // Leaving (detached, or parked: its row being handed over): the end is decided once the
    // writes and the hand-over have landed. A lease renewal that raced the hand-over's claim
    // fails because of it, and must not call a parked turn lost.
    if (this.#state.kind === 'detached') this.#lostWhileLeaving ??= error
    else if (!this.ending) this.end({ kind: 'lost', error })
  }

  /**
   * Writes the rows held for effect-free states (the step gate's, where a handoff holds the
   * turn) in a transaction of their own, with the parts changed since the last row: the next
   * engine resumes from the gate, the finished step's tool results stored. Before the first
   * model call the held rows ride in the prompt's transaction, which is still open: nothing is
   * written then (the turn is stored `idle`, and the next engine starts it). Resolves when
   * every write queued so far has settled.
   */
  commitHeld(): Promise<void> {
    if (this.#state.kind === 'open' && this.#held.length > 0 && !this.#first) this.#queue(this.#held.splice(0), false, false)
    return this.#tail
  }

  /**
   * Detaches the turn from this engine (close): nothing more is recorded, `stopEffects` stops
   * its actors, the writes already queued land, then what streamed so far; the turn ends
   * `detached` and stays open in the database for the next engine to resume. Parking is the same
   * leaving with its own end (`{ kind: 'parked', state }`): the turn stays open, waiting;
   * `handOver` (the row given to the parked owner; true when it was) runs after the writes and
   * before the end.
   */
  async detach(stopEffects: () => void, end: Extract<TurnEnd, { kind: 'detached' | 'parked' }> = { kind: 'detached' }, handOver?: () => Promise<boolean>): Promise<void> {
    const state = this.#state
    if (state.kind === 'ended') return
    // (a final row in flight stays `ending`: it lands, and its end wins)
    if (state.kind !== 'ending') this.#state = { kind: 'detached', failure: this.#failure() }
    this.#held = []
    this.#first?.known.resolve()
    stopEffects()
    await this.#options.scope.writer.flush().catch(() => undefined)
    await this.#tail
    // (parking: the row goes to the parked owner before the end is reported)
    const handedOver = handOver ? await handOver().catch(() => false) : false
    // A loss heard meanwhile is the end, unless the row was handed over (then the loss was the hand-over's).
    const lost = this.#lostWhileLeaving
    this.end(lost && !handedOver ? { kind: 'lost', error: lost } : end)
  }

  /**
   * The one place a turn's end is decided: the first end wins, the writer takes no more
   * changes, the end's own events are published and `ended` settles with it.
   */
  end(end: TurnEnd): void {
    if (this.#state.kind === 'ended') return
    this.#state = { kind: 'ended', end }
    this.#held = []
    this.#first?.known.resolve()
    this.#options.scope.writer.seal()
    publishEnd(this.#options.bus, { sessionId: this.#sessionId, turnId: this.#turnId }, end)
    this.#ended.resolve(end)
  }

  /** The final row could not be written: the turn ends here, and its row is left for recovery. */
  #endUnwritten(failure: SerializedError): void {
    this.end({ kind: 'unwritten', error: failure })
  }

  /** After the commit: the rows' events; a final row's is the turn's end (with its error). */
  #publish(rows: TransitionRecord[], context: TurnContext, error: SerializedError | null): void {
    const { scope } = this.#options
    const turn = { turnId: this.#turnId, sessionId: this.#sessionId, stepTools: scope.messages.stepTools, redactor: scope.config.redactor }
    const outcome = publishRows(this.#options.bus, turn, rows, context)
    if (outcome) this.end({ kind: 'finished', outcome, ...(error ? { error } : {}) })
  }
}

/**
 * The inspector that tells `log` of each snapshot of the turn's own actor and the event that
 * made it (the root actor's: its children, the step, tools and compaction, are not recorded),
 * through XState's documented interception point: an `@xstate.snapshot` inspection event
 * carries both (https://stately.ai/docs/inspection). XState reports a snapshot after it started
 * the entered state's actors, in the same synchronous call; each of them waits for the state's
 * row (`committed()` yields once before reading the queue), so none acts before its row is
 * recorded and written.
 *
 * @example
 * const actor = createActor(chart.machine, { input, inspect: transitionsTo(log) }) // every transition of the root actor is recorded
 */
export function transitionsTo(log: Pick<TurnLog, 'record'>): (event: InspectionEvent) => void {
  return (inspection) => {
    if (inspection.type !== '@xstate.snapshot' || inspection.actorRef.sessionId !== inspection.rootId) return
    log.record(inspection.event, inspection.snapshot as TurnSnapshot)
  }
}
