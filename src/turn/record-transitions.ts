/**
 * The transition recorder: the one writer of a turn's log. Each transition of the chart is
 * written in one transaction with the rows that changed since the last one (parts, messages)
 * and the turn's new state, then published. The end of a turn (completed, failed, aborted, or
 * the actor stopped) closes every open part in the same transaction as the final transition.
 */
import type { AnyEventObject, SnapshotFrom } from 'xstate'
import type { TurnMachine } from '../../machines/turn.machine'
import type { TurnContext } from '../../machines/turn.types'
import type { Bus } from '../bus'
import { MessageAbortedError, serializeError, StorageError, type SerializedError } from '../errors'
import type { Part, SessionStatus, TransitionRecord, TurnOutcome } from '../types'
import type { TurnScope } from './turn-scope'

type TurnSnapshot = SnapshotFrom<TurnMachine>

const finalStates = new Set(['completed', 'failed', 'aborted'])
export const toolAbortedMessage = 'Tool execution aborted'

export interface RecorderOptions {
  turnId: string
  sessionId: string
  scope: TurnScope
  bus: Bus
  /** A restored turn (recovery): its snapshot and the seq of its last logged transition. */
  restored?: { snapshot: TurnSnapshot; seq: number }
  /** A write failed: fail the turn (sends `turn.fail` to the chart). */
  fail(error: SerializedError): void
  /** The turn's last row is written (or could not be): it has ended. */
  ended(result: { turnId: string; sessionId: string; outcome: TurnOutcome; error?: SerializedError }): void
}

export class TransitionRecorder {
  private previous: string
  private previousContext: unknown
  private seq: number
  private settled = false
  private detached = false

  constructor(private readonly options: RecorderOptions) {
    this.previous = options.restored ? String(options.restored.snapshot.value) : 'idle'
    this.previousContext = options.restored?.snapshot.context
    this.seq = options.restored?.seq ?? 0
  }

  /** The turn leaves this engine without ending (it waits for approval): stopping it is not an abort. */
  detach(): void {
    this.detached = true
  }

  /**
   * Called with each snapshot of the turn's actor and the event that produced it. A snapshot
   * whose state and context did not change writes nothing.
   *
   * @example
   * createActor(machine, { inspect: (e) => e.type === '@xstate.snapshot' && recorder.record(e.event, e.snapshot) })
   */
  record(event: AnyEventObject, snapshot: TurnSnapshot): void {
    if (this.settled) return
    if (event.type === 'xstate.init') {
      this.previousContext = snapshot.context
      return
    }
    const stopped = snapshot.status === 'stopped' && event.type === 'xstate.stop'
    if (stopped && this.detached) return
    const to = stopped ? 'aborted' : String(snapshot.value)
    // A transition is a row when the state or the context changed (an approval changes only context).
    if (to === this.previous && snapshot.context === this.previousContext) return
    this.previousContext = snapshot.context
    const from = this.previous
    this.previous = to

    const { scope, turnId } = this.options
    const now = Date.now()
    const context = snapshot.context
    const final = finalStates.has(to)
    const outcome = final ? (to as TurnOutcome) : null
    // Last net before the rows and events: the engine's secrets removed from whatever error got here.
    const error: SerializedError | null = stopped ? new MessageAbortedError().toJSON() : scope.config.redactor.value(context.error)
    if (final) {
      this.settled = true
      closeTurn(scope, outcome!, error, now)
    }
    const row: TransitionRecord = {
      turnId,
      seq: ++this.seq,
      from,
      event: event.type,
      to,
      payload: scope.config.redactor.value(eventPayload(event)),
      time: now,
      parts: scope.writer.takeTouched(),
    }
    const retryAt = to === 'retry-waiting' ? now + context.retryDelayMs : null
    const write = scope.queue.run(() =>
      scope.writer.commit(async (tx) => {
        await tx.appendTransition(row)
        await tx.updateTurn(turnId, { state: to, outcome, step: context.step, attempt: context.attempt, retryAt, error: final ? error : null }, now)
      }),
    )
    write.then(
      () => this.publish(row, context, retryAt, error),
      (cause) => {
        const failure = new StorageError(`recording the transition to ${to}`, cause).toJSON()
        if (final) this.publish(row, context, retryAt, failure)
        else this.options.fail(failure)
      },
    )
  }

  /** After the commit: the transition, the status, and at the end the error and the result. */
  private publish(row: TransitionRecord, context: TurnContext, retryAt: number | null, error: SerializedError | null): void {
    const { bus, scope, turnId, sessionId } = this.options
    bus.publish({ type: 'turn.transition', sessionId, turnId, seq: row.seq, from: row.from, event: row.event, to: row.to, time: row.time })
    if (!finalStates.has(row.to)) {
      const status: SessionStatus =
        row.to === 'retry-waiting'
          ? { type: 'retry', turnId, attempt: context.attempt, message: scope.config.redactor.text(context.error?.message ?? 'retrying'), next: retryAt ?? row.time }
          : { type: 'busy', turnId, state: row.to }
      bus.publish({ type: 'session.status', sessionId, status })
      if (row.to === 'awaiting-approval' && row.from !== 'awaiting-approval') {
        const calls = scope.stepTools
          .filter((p) => context.pendingApprovals.includes(p.callId))
          .map((p) => ({ callId: p.callId, tool: p.tool, input: p.state.input }))
        bus.publish({ type: 'approval.requested', sessionId, turnId, calls })
      }
      return
    }
    if (error) bus.publish({ type: 'session.error', sessionId, turnId, error })
    bus.publish({ type: 'session.status', sessionId, status: { type: 'idle' } })
    this.options.ended({ turnId, sessionId, outcome: row.to as TurnOutcome, ...(error ? { error } : {}) })
  }
}

/**
 * The end of a turn, whatever its outcome: open text closed, tools that had not finished
 * marked (aborted, or not run because the turn failed), the assistant message completed and
 * given the error.
 */
function closeTurn(scope: TurnScope, outcome: TurnOutcome, error: SerializedError | null, now: number): void {
  const message = scope.assistantMessage()
  const toolMessage = outcome === 'failed' ? `Tool not run: the turn failed${error ? ` (${error.name})` : ''}` : toolAbortedMessage
  for (const assistant of scope.assistantMessages()) {
    for (const part of assistant.parts) closePart(scope, part, now, toolMessage)
    assistant.info.time.completed ??= now
  }
  if (outcome !== 'completed' && error) message.info.error = error
  for (const assistant of scope.assistantMessages()) scope.writer.message(assistant.info)
  scope.writer.seal()
}

function closePart(scope: TurnScope, part: Part, now: number, toolMessage: string): void {
  if ((part.type === 'text' || part.type === 'reasoning') && part.time.end === undefined) {
    part.time.end = now
    scope.writer.changed(part)
  } else if (part.type === 'tool' && (part.state.status === 'pending' || part.state.status === 'running')) {
    const start = part.state.status === 'running' ? part.state.time.start : now
    part.state = { status: 'error', input: part.state.input, error: toolMessage, metadata: { interrupted: true }, time: { start, end: now } }
    scope.writer.changed(part)
  }
}

/** The event's payload without its type; errors serialised (control data only). */
function eventPayload(event: AnyEventObject): Record<string, unknown> {
  const { type: _type, ...rest } = event
  if ('error' in rest && rest.error instanceof Error) rest.error = serializeError(rest.error)
  if ('output' in rest && rest.output === undefined) delete rest.output
  return rest
}
