/**
 * How a turn ends, as its log decides it (`TurnLog.end`), and what an end does to the turn's
 * messages: open work closed, the assistant message completed and given the error.
 */
import type { SerializedError, TurnOwnershipLostError } from '../../core/errors'
import type { MessageInfo, MessageWithParts, Part, TurnOutcome } from '../../core/types'
import type { NotRunReason } from '../../tools/tool-part'
import { closeOpenWork } from './close-open-work'
import type { TurnStall } from '../../../machines/turn.types'

/**
 * A turn's end, once: `finished` (its final row is written: the outcome is final), `unwritten`
 * (its final row could not be written: the turn's row stays open, and recovery ends or resumes
 * it; the outcome is not known), `lost` (another engine owns the turn), `stalled` (it stopped
 * moving here: its engine stopped it and let it go, for recovery to resume), `detached` (the engine
 * closed; the turn stays open for the next engine), `parked` (it waits in a parkable state and
 * this engine lets go of it: the control that settles the wait resumes it), `not-started`
 * (nothing was written).
 */
export type TurnEnd =
  | { kind: 'finished'; outcome: TurnOutcome; error?: SerializedError }
  | { kind: 'unwritten'; error: SerializedError }
  | { kind: 'lost'; error: TurnOwnershipLostError }
  /** Its engine found it stalled (stall-watch.ts): stopped here, left open for recovery. */
  | ({ kind: 'stalled' } & TurnStall)
  | { kind: 'detached' }
  | { kind: 'parked'; state: string }
  | { kind: 'not-started'; error: unknown }

/** What closing a turn's messages needs of its scope. */
export interface ClosingScope {
  readonly messages: {
    assistantMessage(): MessageWithParts
    assistantMessages(): MessageWithParts[]
  }
  readonly writer: { changed(part: Part): void; message(info: MessageInfo): void }
}

/**
 * The end of a turn, whatever its outcome: open text closed, tools that had not finished
 * marked (aborted, or not run because the turn failed), the assistant message completed and
 * given the error. Run twice when a final row failed and the failure's row replaces it: what
 * the first run closed at `now` gets the second run's reason (the rolled-back write left these
 * very objects dirty).
 */
export function closeTurn(scope: ClosingScope, outcome: TurnOutcome, error: SerializedError | null, now: number): void {
  const message = scope.messages.assistantMessage()
  const reason: NotRunReason = outcome === 'failed' ? { kind: 'turn-failed', ...(error ? { errorName: error.name } : {}) } : { kind: 'aborted' }
  for (const assistant of scope.messages.assistantMessages()) {
    for (const part of closeOpenWork(assistant.parts, reason, now)) scope.writer.changed(part)
    assistant.info.time.completed ??= now
  }
  if (outcome !== 'completed' && error) message.info.error = error
  for (const assistant of scope.messages.assistantMessages()) scope.writer.message(assistant.info)
}
