/**
 * The one way open work is closed: text and reasoning still streaming end where they are, and
 * tool calls still waiting or running stop with the reason's message (src/tools/tool-part.ts).
 * Used at a turn's end (the turn log) and when recovery finds a crashed turn.
 */
import { stopCall, type NotRunReason } from '../../tools/tool-part'
import type { Part, ToolPart } from '../../core/types'

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
