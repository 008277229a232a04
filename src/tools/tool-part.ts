/**
 * The life of a tool part, in one place: every change of a tool call's state is one of these
 * functions, and every "did not run" has a typed reason with one message.
 *
 *   pending ─► awaiting approval (pending, approval: required) ─► running ─► completed
 *      │                │ denied, expired (a receipt either way)   │  ▲
 *      └────────────────┴──────────► error ◄─────────────────────┤  │ retry (same key)
 *                                                                 ▼  │
 *                                            in-doubt / deferred ─► completed | error (resolveCall, reconcile, deadline)
 */
import { inputDigest } from '../core/input-digest'
import type { ApprovalReceipt, ToolPart } from '../core/types'
import { callWait, settledBy } from '../core/call-wait'

/** Why a call did not run, or stopped before it finished. */
export type NotRunReason =
  /** The turn failed (a storage failure, a doom loop, the step limit…) before the call ran. */
  | { kind: 'turn-failed'; errorName?: string }
  /** The turn was aborted while the call waited or ran. */
  | { kind: 'aborted' }
  /** The process running the turn died while the call waited or ran (recovery). */
  | { kind: 'restart' }
  /** The model request of the step failed; the step was retried or ended without its calls. */
  | { kind: 'attempt-failed' }

/** The message the model and the user see for a call that did not run. */
export function notRunMessage(reason: NotRunReason): string {
  switch (reason.kind) {
    case 'turn-failed':
      return `Tool not run: the turn failed${reason.errorName ? ` (${reason.errorName})` : ''}`
    case 'aborted':
      return 'Tool execution aborted'
    case 'restart':
      return 'interrupted by a restart'
    case 'attempt-failed':
      return 'The tool did not run: the model request failed and the step was retried or ended'
  }
}

/** True while the call waits or runs (what the end of a turn must close). */
function isOpenCall(part: ToolPart): boolean {
  const { status } = part.state
  return status === 'pending' || status === 'running' || status === 'in-doubt' || status === 'deferred'
}

/** The execution of the call that runs now or ran last (1 for the first). */
export function executionOf(part: ToolPart): number {
  const state = part.state
  return 'execution' in state && typeof state.execution === 'number' ? state.execution : 1
}

/** The call waits for its outcome (`in-doubt`) or its result (`deferred`): `engine.resolveCall` settles it. */
export function isWaitingCall(part: ToolPart): boolean {
  const wait = callWait(part.state)
  return wait !== undefined && settledBy(wait.kind) === 'result'
}

/**
 * Nobody knows whether the call's effect happened (`reason`: `restart` when its engine died mid-call,
 * else the message of the `CallOutcomeUnknownError` it threw). Only a running call moves.
 */
export function doubtCall(part: ToolPart, reason: string): boolean {
  if (part.state.status !== 'running') return false
  const { input, time } = part.state
  part.state = { status: 'in-doubt', input, ...modelInputOf(part), execution: executionOf(part), reason, time: { start: time.start } }
  return true
}

/** The tool's `reconcile` was asked and could not tell: the call stays in doubt, not asked again for this execution. */
export function markReconciled(part: ToolPart): void {
  if (part.state.status === 'in-doubt') part.state = { ...part.state, reconciled: true }
}

/** The tool returned `defer()`: the call waits for its result, until `deadline` when there is one (then `onDeadline`'s output, else an error). */
export function deferCall(part: ToolPart, deadline: number | undefined, onDeadline?: { output: unknown }): void {
  if (part.state.status !== 'running') return
  const { input, time } = part.state
  const until = deadline !== undefined ? { deadline, ...(onDeadline ? { onDeadline } : {}) } : {}
  part.state = { status: 'deferred', input, ...modelInputOf(part), execution: executionOf(part), ...until, time: { start: time.start } }
}

/** The call runs again (reconcile's `done: false`, `resolveCall`'s retry): its next execution, with the same idempotency key. */
export function rerunCall(part: ToolPart, now: number): void {
  const { input } = part.state
  part.state = { status: 'running', input, ...modelInputOf(part), execution: executionOf(part) + 1, time: { start: now } }
}

/**
 * A deferred call whose stored deadline passed by `now`: its `onDeadline` output, or an error the
 * model sees (`metadata.expired`). Returns whether it changed.
 */
export function expireDeferredCall(part: ToolPart, now: number): boolean {
  if (part.state.status !== 'deferred' || part.state.deadline === undefined || part.state.deadline > now) return false
  const { input, deadline, onDeadline, time } = part.state
  const end = { time: { start: time.start, end: now } }
  part.state = onDeadline
    ? { status: 'completed', input, ...modelInputOf(part), output: onDeadline.output, ...end }
    : { status: 'error', input, ...modelInputOf(part), error: deadlineMessage(deadline), metadata: { expired: true }, ...end }
  return true
}

/** The message the model sees for a deferred call whose deadline passed. */
export function deadlineMessage(deadline: number): string {
  return `the tool's result did not arrive before its deadline (${new Date(deadline).toISOString()})`
}

/**
 * The model finished the call's arguments: it will run (unless approval is asked). Only a
 * pending call moves.
 *
 * @example
 * runCall(part, { path: '.' }, Date.now())
 */
export function runCall(part: ToolPart, input: unknown, now: number): boolean {
  if (part.state.status !== 'pending') return false
  part.state = { status: 'running', input, time: { start: now } }
  return true
}

/** The call needs `approve`/`deny` before it runs; until `expiresAt` when its approval has a timeout. */
export function requireApproval(part: ToolPart, expiresAt?: number): void {
  part.state = { status: 'pending', input: part.state.input, approval: 'required', ...(expiresAt !== undefined ? { expiresAt } : {}) }
}

/** Who decided, when given (`approve`'s and `deny`'s `by`). */
export interface DecisionBy {
  by?: string
}

/**
 * A waiting call was approved: it runs when the turn enters `tool-running`; with the approver's
 * edited input (checked already), which the part keeps beside the model's. The part gets its
 * receipt: who, when, and the digest of the input it may run with (run-tools.ts checks it).
 */
export function approveCall(part: ToolPart, now: number, edited?: { input: unknown }, decided: DecisionBy = {}): ApprovalReceipt {
  const input = edited ? edited.input : part.state.input
  part.receipt = { decision: 'approved', ...byOf(decided), at: now, inputDigest: inputDigest(input), ...(edited ? { edited: true as const } : {}) }
  part.state = edited
    ? { status: 'running', input: edited.input, modelInput: part.state.input, time: { start: now } }
    : { status: 'running', input: part.state.input, time: { start: now } }
  return part.receipt
}

const byOf = ({ by }: DecisionBy) => (by !== undefined ? { by } : {})

/**
 * True when `part` may run with `input`: it asked for no approval, or its approval's digest is
 * `input`'s. A call whose input changed after its approval (a tampered row, a bug) never runs.
 */
export function matchesApproval(part: ToolPart, input: unknown): boolean {
  return part.receipt?.decision !== 'approved' || part.receipt.inputDigest === inputDigest(input)
}

/** The model's input of an edited call, carried through the call's later states. */
const modelInputOf = (part: ToolPart) => ('modelInput' in part.state && part.state.modelInput !== undefined ? { modelInput: part.state.modelInput } : {})

/** A waiting call was denied: an error the model sees, carrying the user's reason; its receipt says who and when. */
export function denyCall(part: ToolPart, reason: string | undefined, now: number, decided: DecisionBy = {}): ApprovalReceipt {
  part.receipt = { decision: 'denied', ...byOf(decided), at: now, inputDigest: inputDigest(part.state.input), ...(reason ? { reason } : {}) }
  const error = reason ? `the user denied this tool call: ${reason}` : 'the user denied this tool call'
  part.state = { status: 'error', input: part.state.input, error, metadata: { denied: true, ...(reason ? { reason } : {}) }, time: { start: now, end: now } }
  return part.receipt
}

/** A waiting call's approval timed out (`approvalTimeoutMs`): the model sees it as a denial; the receipt says `expired`. */
export function expireCall(part: ToolPart, now: number): ApprovalReceipt {
  part.receipt = { decision: 'expired', at: now, inputDigest: inputDigest(part.state.input) }
  const error = 'the user denied this tool call: the approval expired (no decision in time)'
  part.state = { status: 'error', input: part.state.input, error, metadata: { denied: true, expired: true }, time: { start: now, end: now } }
  return part.receipt
}

/** The tool returned `output` (already bounded for storage); `modelOutput`: what its `toModelOutput` made of it for the model. */
export function completeCall(part: ToolPart, output: unknown, now: number, modelOutput?: unknown): void {
  const start = 'time' in part.state ? part.state.time.start : now
  part.state = { status: 'completed', input: part.state.input, ...modelInputOf(part), output, ...(modelOutput !== undefined ? { modelOutput } : {}), time: { start, end: now } }
}

/** The call failed with `error` (the tool threw, its input was invalid, it is unknown). */
export function failCall(part: ToolPart, error: string, now: number, input: unknown = part.state.input): void {
  const start = 'time' in part.state ? part.state.time.start : now
  part.state = { status: 'error', input: input ?? {}, ...modelInputOf(part), error, time: { start, end: now } }
}

/**
 * An open call that will not finish: an error with the reason's message, marked interrupted.
 * A call this function closed at the same `now` gets the new reason (a turn's end that is
 * written again as a failure). Returns whether the part changed.
 *
 * @example
 * stopCall(part, { kind: 'aborted' }, Date.now())
 */
export function stopCall(part: ToolPart, reason: NotRunReason, now: number): boolean {
  const error = notRunMessage(reason)
  if (isOpenCall(part)) {
    const start = 'time' in part.state ? part.state.time.start : now
    part.state = { status: 'error', input: part.state.input, ...modelInputOf(part), error, metadata: { interrupted: true }, time: { start, end: now } }
    return true
  }
  if (part.state.status === 'error' && part.state.metadata?.interrupted && part.state.time.end === now && part.state.error !== error) {
    part.state.error = error
    return true
  }
  return false
}
