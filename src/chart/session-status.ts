/**
 * A session's status, derived once: from its open turn's state, read in the chart, and the few
 * facts that state's status shows. `engine.status` reads it from what the turn announced (the
 * facts in memory), `engine.readStatus` and Restate's `status` from the store (the facts read
 * back); both come here, so they cannot disagree about what a state means.
 */
import { retryWaitStates, waitOf, workOf } from '../../machines/turn.machine'
import type { SessionStatus, ToolPart } from '../core/types'
import { awaitedCalls } from './awaited-calls'

/** A call a descendant turn waits for a decision on, with that turn's id (run trees). */
export type ApprovalBelow = { callId: string; tool: string; input: unknown; turnId: string }

/** The facts besides its state that a turn's status shows (`statusFacts` says which). */
export interface StatusFacts {
  /** A retry wait's: its attempt, the error it retries (redacted) and when the next attempt is. */
  retry?: { attempt: number; message: string; next: number }
  /** A wait on calls: the turn's tool parts, among which are the calls it waits on. */
  toolParts?: readonly ToolPart[]
  /** While its tools run: the calls its descendant turns wait for a decision on. */
  approvalsBelow?: readonly ApprovalBelow[]
}

/**
 * Which fact the status of a turn in `state` shows: the retry (a retry wait), its tool parts (a
 * waiting state), the approvals below it (its tools run, maybe a child turn among them), none.
 *
 * @example
 * statusFacts('compaction-retry-waiting') // 'retry'
 */
export function statusFacts(state: string): keyof StatusFacts | undefined {
  if (retryWaitStates.has(state)) return 'retry'
  if (waitOf(state)) return 'toolParts'
  if (workOf(state)?.boundBy === 'tools') return 'approvalsBelow'
  return undefined
}

/**
 * The status of a session whose open turn `turnId` is in `state`.
 *
 * @example
 * sessionStatus('trn_1', 'awaiting-approval', { toolParts }) // { type: 'busy', turnId, state, approvals: [...] }
 */
export function sessionStatus(turnId: string, state: string, facts: StatusFacts): SessionStatus {
  const shown = statusFacts(state)
  if (shown === 'retry') return { type: 'retry', turnId, ...(facts.retry ?? { attempt: 0, message: 'retrying', next: 0 }) }
  if (shown === 'toolParts') return { type: 'busy', turnId, state, ...awaitedCalls(waitOf(state)!.awaits, facts.toolParts ?? []) }
  const approvals = shown === 'approvalsBelow' ? (facts.approvalsBelow ?? []) : []
  return { type: 'busy', turnId, state, ...(approvals.length > 0 ? { approvals: [...approvals] } : {}) }
}
