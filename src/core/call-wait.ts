/**
 * What a tool call waits for, read from its stored state: the one place a call's wait is told
 * from its state; the status, the announcements, the deadline sweep, the controls and the tool
 * runner all ask `callWait`.
 */
import type { ToolState } from './types'

/** What a waiting call waits for: a person's decision, a person's word on a call in doubt, a result from the world, or a time. */
export type AwaitedKind = 'approval' | 'in-doubt' | 'deferred' | 'sleep'

/**
 * A call's wait: what it waits for, since when (a call in doubt or deferred: when it ran), and
 * when it ends by itself (an approval's expiry, a deferred call's deadline, a sleep's end); a call
 * in doubt with why, a sleep (a deferred call that settles itself at its deadline) with the output
 * it then returns.
 */
export type CallWait =
  | { kind: 'approval'; deadline?: number }
  | { kind: 'in-doubt'; since: number; reason: string }
  | { kind: 'deferred'; since: number; deadline?: number }
  | { kind: 'sleep'; since: number; deadline?: number; output: unknown }

/**
 * The wait of a call in `state`; undefined when it does not wait on a person or the world (it
 * runs, it ended, or it is pending without needing an approval).
 *
 * @example
 * callWait(part.state) // { kind: 'approval', deadline: 1733300000000 }
 */
export function callWait(state: ToolState): CallWait | undefined {
  const deadline = (at: number | undefined) => (at !== undefined ? { deadline: at } : {})
  switch (state.status) {
    case 'pending':
      return state.approval === 'required' ? { kind: 'approval', ...deadline(state.expiresAt) } : undefined
    case 'in-doubt':
      return { kind: 'in-doubt', since: state.time.start, reason: state.reason }
    case 'deferred':
      return state.onDeadline
        ? { kind: 'sleep', since: state.time.start, ...deadline(state.deadline), output: state.onDeadline.output }
        : { kind: 'deferred', since: state.time.start, ...deadline(state.deadline) }
    default:
      return undefined
  }
}

/** What settles a call's wait: a decision (`approve` / `deny`) or a result (`resolveCall`, or its deadline). */
export function settledBy(kind: AwaitedKind): 'decision' | 'result' {
  return kind === 'approval' ? 'decision' : 'result'
}
