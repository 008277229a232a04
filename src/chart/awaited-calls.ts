/**
 * The calls a waiting turn waits on, read from its tool parts by what the wait awaits (the
 * chart's `WaitMeaning.awaits`): what its status lists, what it announces, and the earliest
 * deadline among them (the turn row's `retry_at`, which whichever engine sweeps settles). One
 * reading for the live turn (its step's parts) and for a stored one (its parts read back). A
 * wait for a time (`throttled`) waits on no call: it lists nothing, announces its time, and
 * its deadline is that time.
 */
import type { TurnContext, WaitMeaning } from '../../machines/turn.types'
import type { TurnchartEvent } from '../core/bus'
import { callWait, type AwaitedKind } from '../core/call-wait'
import type { ToolPart, WaitingCall } from '../core/types'

/** A call waiting for `approve` / `deny`, as statuses and `approval.requested` list it. */
export interface ApprovalCall {
  callId: string
  tool: string
  input: unknown
  /** When its approval expires (`approvalTimeoutMs`): a denial the model sees. */
  expiresAt?: number
}

/** What a waiting turn lists: the calls a person decides on, the calls whose results it waits for, or nothing (a time). */
export type AwaitedCalls = { approvals: ApprovalCall[] } | { calls: WaitingCall[] } | Record<string, never>

/** What a waiting turn waits on: its step's tool parts (the calls), and its context (a time). */
export interface WaitFacts {
  stepTools: readonly ToolPart[]
  context: Pick<TurnContext, 'throttledUntil'>
}

/**
 * @example
 * awaitedCalls('decision', stepTools) // { approvals: [{ callId: 'call_1', tool: 'deploy', input: {} }] }
 */
export function awaitedCalls(awaits: WaitMeaning['awaits'], parts: readonly ToolPart[]): AwaitedCalls {
  if (awaits === 'time') return {}
  return awaits === 'decision' ? { approvals: approvalsIn(parts) } : { calls: waitingCallsIn(parts) }
}

/** The event that tells callers what a turn waits on (on entry to the wait, and again where another engine resumes it). */
export function waitAnnouncement(awaits: WaitMeaning['awaits'], ids: { sessionId: string; turnId: string }, facts: WaitFacts): TurnchartEvent {
  if (awaits === 'time') return { type: 'turn.throttled', ...ids, until: facts.context.throttledUntil ?? 0 }
  if (awaits === 'decision') return { type: 'approval.requested', ...ids, calls: approvalsIn(facts.stepTools) }
  return { type: 'calls.waiting', ...ids, calls: waitingCallsIn(facts.stepTools) }
}

/**
 * When a waiting turn's wait ends by itself, its row's deadline: its time (a wait for a time),
 * else the earliest deadline of the calls it waits on; null when none has one.
 *
 * @example
 * deadlineOfWait('time', { stepTools: [], context: { throttledUntil: 1733300000000 } }) // 1733300000000
 */
export function deadlineOfWait(awaits: WaitMeaning['awaits'], facts: WaitFacts): number | null {
  return awaits === 'time' ? (facts.context.throttledUntil ?? null) : waitDeadline(facts.stepTools)
}

/** The calls among `parts` that wait for a decision (pending, approval required). */
export function approvalsIn(parts: readonly ToolPart[]): ApprovalCall[] {
  return parts.flatMap(({ callId, tool, state }) => {
    const wait = callWait(state)
    return wait?.kind === 'approval' ? [{ callId, tool, input: state.input, ...(wait.deadline !== undefined ? { expiresAt: wait.deadline } : {}) }] : []
  })
}

/** The calls among `parts` that wait for `resolveCall`, as statuses and events show them (a sleep as the deferred call it is). */
export function waitingCallsIn(parts: readonly ToolPart[]): WaitingCall[] {
  return parts.flatMap(({ callId, tool, state }): WaitingCall[] => {
    const wait = callWait(state)
    if (wait?.kind === 'in-doubt') return [{ callId, tool, input: state.input, status: 'in-doubt', reason: wait.reason }]
    if (wait?.kind === 'deferred' || wait?.kind === 'sleep') return [{ callId, tool, input: state.input, status: 'deferred', ...(wait.deadline !== undefined ? { deadline: wait.deadline } : {}) }]
    return []
  })
}

/**
 * The earliest deadline among the calls `parts` wait on (`awaitedCallsIn`: an approval's
 * `expiresAt`, a deferred call's or a sleep's deadline); null when none has one.
 *
 * @example
 * waitDeadline(stepTools) // 1733300000000
 */
export function waitDeadline(parts: readonly ToolPart[]): number | null {
  const deadlines = awaitedCallsIn(parts).flatMap((call) => (call.deadline !== undefined ? [call.deadline] : []))
  return deadlines.length ? Math.min(...deadlines) : null
}

/** A call among `parts` that waits, with what it waits for, since when and until when. */
export interface AwaitedCall {
  callId: string
  toolName: string
  kind: AwaitedKind
  input: unknown
  /** When the call began to wait, when its part says (a call in doubt or deferred: when it ran). */
  since?: number
  /** When its wait ends by itself: an approval's expiry, a deferred call's deadline, a sleep's end. */
  deadline?: number
}

/**
 * Every call among `parts` that waits on a person or the world, whatever the wait.
 *
 * @example
 * awaitedCallsIn(parts) // [{ callId: 'call_1', toolName: 'deploy', kind: 'approval', input: {}, deadline: 1733300000000 }]
 */
export function awaitedCallsIn(parts: readonly ToolPart[]): AwaitedCall[] {
  return parts.flatMap(({ callId, tool, state }): AwaitedCall[] => {
    const wait = callWait(state)
    if (!wait) return []
    const since = wait.kind !== 'approval' ? { since: wait.since } : {}
    const deadline = wait.kind !== 'in-doubt' && wait.deadline !== undefined ? { deadline: wait.deadline } : {}
    return [{ callId, toolName: tool, kind: wait.kind, input: state.input, ...since, ...deadline }]
  })
}
