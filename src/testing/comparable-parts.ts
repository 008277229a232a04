/**
 * Stored parts with what differs between two runs of the same answer set aside (ids, times),
 * so that a turn and its re-run compare equal when they produced the same thing.
 */
import type { MessageWithParts, Part } from '../core/types'

/** A part without its ids (`id`, `sessionId`, `messageId`, a tool's `callId`) and times (an approval receipt's `at` too). */
export type ComparablePart = Record<string, unknown> & { type: Part['type'] }

/**
 * @example
 * expect(comparableParts(await rerun.messages(s2))).toEqual(comparableParts(await engine.messages(s1)))
 */
export function comparableParts(input: ReadonlyArray<MessageWithParts | Part>): ComparablePart[] {
  const parts = input.flatMap((item) => ('info' in item ? item.parts : [item]))
  return parts.map((part) => {
    const { id: _id, sessionId: _session, messageId: _message, time: _time, ...rest } = part as Part & { time?: unknown }
    if (rest.type !== 'tool') return rest as ComparablePart
    const { callId: _call, state, receipt, ...tool } = rest as Extract<Part, { type: 'tool' }>
    const { time: _stateTime, ...fields } = state as typeof state & { time?: unknown }
    const decided = receipt ? (({ at: _at, ...kept }) => ({ receipt: kept }))(receipt) : {}
    return { ...tool, ...decided, state: fields } as ComparablePart
  })
}

/**
 * The index of the first part that differs (a part missing on one side differs), or -1.
 *
 * @example
 * firstDifference(comparableParts(a), comparableParts(b)) // 4
 */
export function firstDifference(a: readonly ComparablePart[], b: readonly ComparablePart[]): number {
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    if (i >= a.length || i >= b.length || JSON.stringify(a[i]) !== JSON.stringify(b[i])) return i
  }
  return -1
}
