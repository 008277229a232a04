/**
 * Starts one turn: the chart with the real actors, and the transition recorder that writes
 * each transition (with the parts that changed and the turn's new state) in one transaction,
 * then publishes it. The end of a turn (completed, failed, aborted, or the actor stopped)
 * closes every open part in the same transaction as the final transition.
 */
import { createActor, fromCallback, fromPromise, type Actor, type AnyEventObject, type InspectionEvent, type SnapshotFrom } from 'xstate'
import { turnMachine, type TurnMachine } from '../../machines/turn.machine'
import type { TurnContext, TurnEvent, TurnInput } from '../../machines/turn.types'
import type { Bus } from '../bus'
import { summarize } from '../compaction/summarize'
import type { ResolvedConfig } from '../config'
import { MessageAbortedError, serializeError, StorageError, type SerializedError } from '../errors'
import { newId } from '../ids'
import { streamStep } from '../llm/stream-step'
import type { Repository } from '../store/repository'
import { runTools } from '../tools/run-tools'
import type { Part, SessionStatus, TransitionRecord, TurnOutcome } from '../types'
import { TurnScope } from './turn-scope'

export interface TurnResult {
  turnId: string
  sessionId: string
  outcome: TurnOutcome
  /** The error stored on the assistant message when the turn failed or was aborted. */
  error?: SerializedError
}

/** A running turn. */
export interface Turn {
  readonly id: string
  readonly sessionId: string
  /** The XState actor of this turn (inspect it, subscribe to it, or stop it: stopping aborts). */
  readonly actor: Actor<TurnMachine>
  /** Settles when the turn's last row is written: resolves with its outcome; rejects only when the turn could not start (e.g. unknown session). */
  readonly done: Promise<TurnResult>
  /** Aborts the turn: the in-flight request and running tools get an aborted signal. */
  abort(reason?: string): void
}

export interface TurnDeps {
  config: ResolvedConfig
  repo: Repository
  bus: Bus
  /** Called once when the turn has settled (after its last write), successfully or not. */
  onSettled(turn: Turn): void
}

const finalStates = new Set(['completed', 'failed', 'aborted'])
const toolAbortedMessage = 'Tool execution aborted'

type TurnSnapshot = SnapshotFrom<TurnMachine>

/**
 * Starts a turn for `prompt` in `sessionId`. The actor exists at once (in `idle`); it moves
 * to `streaming` when the prompt is stored.
 *
 * @example
 * const turn = startTurn(deps, session.id, 'hi')
 * const { outcome } = await turn.done
 */
export function startTurn(deps: TurnDeps, sessionId: string, prompt: string): Turn {
  const { config, repo, bus } = deps
  const turnId = newId('trn')
  let actor!: Actor<TurnMachine>
  const scope = new TurnScope(config, repo, bus, turnId, sessionId, (error) => {
    actor.send({ type: 'turn.fail', error: new StorageError('writing parts', error).toJSON() })
  })

  const machine = turnMachine.provide({
    actors: {
      streamStep: fromCallback<TurnEvent, { turnId: string; step: number; attempt: number; waitedMs: number }>(({ input, sendBack }) => {
        const controller = new AbortController()
        void streamStep(scope, input, controller.signal).then((event) => {
          if (!controller.signal.aborted) sendBack(event)
        })
        return () => controller.abort(new MessageAbortedError())
      }),
      runTools: fromPromise(({ signal }) => runTools(scope, signal)),
      compact: fromPromise(({ input, signal }) => summarize(scope, input, signal)),
    },
  })

  const input: TurnInput = {
    turnId,
    sessionId,
    autoCompact: config.compaction.auto,
    maxCompactions: config.compaction.maxPerTurn,
  }

  let resolveDone!: (result: TurnResult) => void
  let rejectDone!: (error: unknown) => void
  const done = new Promise<TurnResult>((resolve, reject) => {
    resolveDone = resolve
    rejectDone = reject
  })

  let previous = 'idle'
  let seq = 0
  let started = false
  let startFailed = false
  let settled = false

  const record = (event: AnyEventObject, snapshot: TurnSnapshot) => {
    if (settled || startFailed) return
    const stopped = snapshot.status === 'stopped' && event.type === 'xstate.stop'
    const to = stopped ? 'aborted' : String(snapshot.value)
    if (to === previous) return
    const from = previous
    previous = to
    const now = Date.now()
    const context = snapshot.context
    const final = finalStates.has(to)
    const outcome = final ? (to as TurnOutcome) : null
    const error: SerializedError | null = stopped ? new MessageAbortedError().toJSON() : context.error
    if (final) {
      settled = true
      closeTurn(scope, outcome!, error, now)
    }
    const row: TransitionRecord = { turnId, seq: ++seq, from, event: event.type, to, payload: eventPayload(event), time: now }
    const retryAt = to === 'retry-waiting' ? now + context.retryDelayMs : null
    const write = scope.queue.run(() =>
      repo.transaction(async (tx) => {
        await tx.upsertParts(scope.writer.takeDirty(), now)
        if (final) for (const message of scope.assistantMessages()) await tx.upsertMessage(message.info)
        await tx.appendTransition(row)
        await tx.updateTurn(turnId, { state: to, outcome, step: context.step, attempt: context.attempt, retryAt, error: final ? error : null }, now)
      }),
    )
    write.then(
      () => publishTransition(row, context, retryAt, error),
      (cause) => {
        if (!final) {
          actor.send({ type: 'turn.fail', error: new StorageError(`recording the transition to ${to}`, cause).toJSON() })
        } else {
          publishTransition(row, context, retryAt, new StorageError(`recording the transition to ${to}`, cause).toJSON())
        }
      },
    )
  }

  const publishTransition = (row: TransitionRecord, context: TurnContext, retryAt: number | null, error: SerializedError | null) => {
    bus.publish({ type: 'turn.transition', sessionId, turnId, seq: row.seq, from: row.from, event: row.event, to: row.to, time: row.time })
    if (!finalStates.has(row.to)) {
      const status: SessionStatus =
        row.to === 'retry-waiting'
          ? { type: 'retry', turnId, attempt: context.attempt, message: context.error?.message ?? 'retrying', next: retryAt ?? row.time }
          : { type: 'busy', turnId, state: row.to }
      bus.publish({ type: 'session.status', sessionId, status })
      return
    }
    for (const message of scope.assistantMessages()) {
      bus.publish({ type: 'message.updated', sessionId, info: structuredClone(message.info) })
    }
    if (error) bus.publish({ type: 'session.error', sessionId, turnId, error })
    bus.publish({ type: 'session.status', sessionId, status: { type: 'idle' } })
    const outcome = row.to as TurnOutcome
    deps.onSettled(turn)
    resolveDone({ turnId, sessionId, outcome, ...(error ? { error } : {}) })
  }

  const inspect = (event: InspectionEvent) => {
    if (event.type === '@xstate.snapshot' && event.actorRef === actor) record(event.event, event.snapshot as TurnSnapshot)
    const user = config.inspect
    if (typeof user === 'function') user(event)
    else user?.next?.(event)
  }

  actor = createActor(machine, { input, inspect, ...(config.clock ? { clock: config.clock } : {}) })
  // An actor error is a bug in turnchart; observe it so it cannot crash the process.
  actor.subscribe({ error: (error) => config.onSubscriberError(error) })

  const turn: Turn = {
    id: turnId,
    sessionId,
    actor,
    done,
    abort(reason?: string) {
      actor.send({ type: 'turn.abort', ...(reason ? { reason } : {}) })
    },
  }

  actor.start()
  scope
    .begin(prompt, (tx) =>
      tx.insertTurn(
        { id: turnId, sessionId, state: 'idle', outcome: null, step: 0, attempt: 1, retryAt: null, error: null, time: { created: Date.now(), updated: Date.now() } },
        input,
      ),
    )
    .then(
      () => {
        started = true
        actor.send({ type: 'turn.start' })
      },
      (error) => {
        startFailed = true
        scope.writer.seal()
        actor.stop()
        deps.onSettled(turn)
        rejectDone(error)
      },
    )
  void started
  return turn
}

/**
 * The end of a turn, whatever its outcome: open text closed, tools that had not finished
 * marked as aborted, the assistant message completed and given the error.
 */
function closeTurn(scope: TurnScope, outcome: TurnOutcome, error: SerializedError | null, now: number): void {
  const message = scope.assistantMessage()
  for (const assistant of scope.assistantMessages()) {
    for (const part of assistant.parts) closePart(scope, part, now)
    assistant.info.time.completed ??= now
  }
  if (outcome !== 'completed' && error) message.info.error = error
  scope.writer.seal()
}

function closePart(scope: TurnScope, part: Part, now: number): void {
  if ((part.type === 'text' || part.type === 'reasoning') && part.time.end === undefined) {
    part.time.end = now
    scope.writer.changed(part)
  } else if (part.type === 'tool' && (part.state.status === 'pending' || part.state.status === 'running')) {
    const start = part.state.status === 'running' ? part.state.time.start : now
    part.state = { status: 'error', input: part.state.input, error: toolAbortedMessage, metadata: { interrupted: true }, time: { start, end: now } }
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
