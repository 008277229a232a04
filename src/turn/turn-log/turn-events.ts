/**
 * What a turn's log tells the bus, after a commit and at the end: each row's transition, a
 * model fallback it records, the session's status, a wait it enters; and the end's own events.
 * Published only for what is in the database (or, at the end, what is final here).
 */
import { isFinalState, waitOf } from '../../../machines/turn.machine'
import type { ModelFallback, TurnContext } from '../../../machines/turn.types'
import type { Bus } from '../../core/bus'
import type { SerializedError } from '../../core/errors'
import type { Redactor } from '../../core/secrets/redact-secrets'
import type { ToolPart, TransitionRecord, TurnOutcome } from '../../core/types'
import { waitAnnouncement } from '../../chart/awaited-calls'
import { sessionStatus } from '../../chart/session-status'
import type { TurnEnd } from './turn-end'

/** The turn the events are of: its ids, the last step's tool parts (a wait names them), its redactor. */
export interface EventsTurn {
  readonly turnId: string
  readonly sessionId: string
  readonly stepTools: readonly ToolPart[]
  readonly redactor: Pick<Redactor, 'text'>
}

/**
 * Each committed row's transition and status, in order (a held row's with the commit of the
 * row that left it). Returns the outcome when a row is final: the turn's end, which the log
 * decides (the rows after it are not published).
 */
export function publishRows(bus: Pick<Bus, 'publish'>, turn: EventsTurn, rows: TransitionRecord[], context: TurnContext): TurnOutcome | undefined {
  const { turnId, sessionId, redactor } = turn
  for (const row of rows) {
    const output = row.event === 'gate.complete' && row.payload.rule === 'output' && 'output' in row.payload ? { output: row.payload.output } : {}
    bus.publish({ type: 'turn.transition', sessionId, turnId, seq: row.seq, from: row.from, event: row.event, to: row.to, time: row.time, ...output })
    const fallback = row.event === 'step.failed' ? (row.payload.fallback as ModelFallback | undefined) : undefined
    if (fallback) bus.publish({ type: 'model.fallback', sessionId, turnId, step: context.step, from: fallback.from, to: fallback.to, reason: redactor.text(fallback.reason) })
    if (isFinalState(row.to)) return row.to as TurnOutcome
    const retry = { attempt: context.attempt, message: redactor.text(context.error?.message ?? 'retrying'), next: row.time + context.retryDelayMs }
    bus.publish({ type: 'session.status', sessionId, status: sessionStatus(turnId, row.to, { retry, toolParts: turn.stepTools }) })
    // (entering the wait: a settling row that stays in it announces nothing new)
    const wait = waitOf(row.to)
    if (wait && row.from !== row.to) bus.publish(waitAnnouncement(wait.awaits, { sessionId, turnId }, { stepTools: turn.stepTools, context }))
  }
  return undefined
}

/** The end's own events: a finished turn's error and idle status, a loss, a stall (a turn that leaves otherwise says nothing). */
export function publishEnd(bus: Pick<Bus, 'publish'>, ids: { turnId: string; sessionId: string }, end: TurnEnd): void {
  if (end.kind === 'finished' || end.kind === 'unwritten') {
    const error: SerializedError | undefined =
      end.kind === 'unwritten' ? { ...end.error, message: `${end.error.message} (the turn's row stays open; recovery ends or resumes it)` } : end.error
    if (error) bus.publish({ type: 'session.error', ...ids, error })
    bus.publish({ type: 'session.status', sessionId: ids.sessionId, status: { type: 'idle' } })
  } else if (end.kind === 'lost') {
    bus.publish({ type: 'turn.lost', ...ids, error: end.error.toJSON() })
  } else if (end.kind === 'stalled') {
    const { kind: _kind, ...stall } = end
    bus.publish({ type: 'turn.stalled', ...ids, ...stall })
  }
}
