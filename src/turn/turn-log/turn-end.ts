/**
 * How a turn ends, as its log decides it (`TurnLog.end`), and what an end does to the turn's
 * messages: open work closed, the assistant message completed and given the error. Open work is
 * closed one way (`closeOpenWork`), at a turn's end and when recovery finds a crashed turn.
 */
import type { SerializedError, TurnOwnershipLostError } from '../../core/errors'
import type { MessageInfo, MessageWithParts, Part, ToolPart, TurnOutcome } from '../../core/types'
import { stopCall, type NotRunReason } from '../../tools/tool-part'
import type { TurnStall } from '../../../machines/turn.types'
import { toolsState, waitOf } from '../../../machines/turn.machine'
import type { ToolSet } from 'ai'
import { isIdempotent } from '../../tools/tool-options'

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

/**
 * A write failed while a non-idempotent call of the step may have had its effect (it ran, or
 * runs, and its result may not be stored): failing the turn would close that call as an error
 * (the model of the next turn would see "not run" of a call that may have run). The turn ends
 * without a final row instead (`unwritten`): its row stays open in the last committed state
 * (`committed`), and the recovery that takes it finds the call still running, so in doubt (its
 * `reconcile` asked, else a person's `resolveCall`).
 */
export function leavesForRecovery(committed: string, stepTools: readonly ToolPart[], tools: ToolSet): boolean {
  // (while calls wait for their results, the others of the step ran: theirs may be what failed to be written)
  if (committed !== toolsState && waitOf(committed)?.awaits !== 'result') return false
  return stepTools.some((part) => part.state.status !== 'pending' && !isIdempotent(Object.hasOwn(tools, part.tool) ? tools[part.tool] : undefined))
}

/**
 * Closes the open parts among `parts` for `reason`; returns the parts that changed. `keep`
 * leaves a call open (an idempotent tool recovery runs again).
 *
 * @example
 * for (const part of closeOpenWork(message.parts, { kind: 'aborted' }, Date.now())) writer.changed(part)
 */
export function closeOpenWork(parts: Part[], reason: NotRunReason, now: number, keep: (part: ToolPart) => boolean = () => false): Part[] {
  const changed: Part[] = []
  for (const part of parts) {
    if ((part.type === 'text' || part.type === 'reasoning') && part.time.end === undefined) {
      part.time.end = now
      changed.push(part)
    } else if (part.type === 'tool' && !keep(part) && stopCall(part, reason, now)) changed.push(part)
  }
  return changed
}
