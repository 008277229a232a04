/**
 * turnchart's options on a tool definition: whether it is idempotent (recovery may run it
 * again after a crash) and its own timeout. Stored on the tool object under a symbol, so an AI
 * SDK `tool()` stays an AI SDK tool. (Approval uses the AI SDK's own `needsApproval`.)
 */
import type { Tool } from 'ai'
import { InvalidArgumentError } from '../core/errors'
import { maxTimerMs } from '../core/timer-limit'
import type { CallInfo } from './call-info'

const optionsKey = Symbol.for('turnchart.toolOptions')

export interface ToolOptions {
  /** Safe to run again after a crash interrupted it. Default false. */
  idempotent?: boolean
  /** This tool's timeout, instead of `toolExecution.timeoutMs`. */
  timeoutMs?: number
  /**
   * Asked when a call of this (non-idempotent) tool has an unknown outcome: it was running when
   * its engine died, its result could not be stored, or it threw `CallOutcomeUnknownError`.
   * `{ done: true, output }`: the effect happened, this is its result (the model sees it);
   * `{ done: false }`: it did not, run the call again (same `idempotencyKey`); `undefined`:
   * cannot tell, the call's part becomes `'in-doubt'` and the turn waits for `engine.resolveCall`.
   * A throw counts as `undefined`. Asked once per execution.
   */
  reconcile?: (input: unknown, call: CallInfo) => ReconcileResult | Promise<ReconcileResult>
  /** How long its calls wait for approval before they expire (the model sees a denial), instead of the engine's `approvalTimeoutMs`. */
  approvalTimeoutMs?: number
}

/** What a tool's `reconcile` hook says of a call whose outcome was unknown. */
export type ReconcileResult = { done: true; output: unknown } | { done: false } | undefined

/**
 * Returns `tool` with turnchart's options set.
 *
 * @example
 * tools: { build: configureTool(tool({ description, inputSchema, execute }), { timeoutMs: 600_000 }) }
 */
export function configureTool<T extends Tool>(tool: T, options: ToolOptions): T {
  if (options.timeoutMs !== undefined && (!Number.isInteger(options.timeoutMs) || options.timeoutMs < 1 || options.timeoutMs > maxTimerMs)) {
    throw new InvalidArgumentError('timeoutMs', options.timeoutMs, `an integer from 1 to ${maxTimerMs} (configureTool)`)
  }
  if (options.reconcile !== undefined && typeof options.reconcile !== 'function') {
    throw new InvalidArgumentError('reconcile', options.reconcile, 'a function (input, callInfo) => { done: true, output } | { done: false } | undefined (configureTool)')
  }
  if (options.approvalTimeoutMs !== undefined && (!Number.isInteger(options.approvalTimeoutMs) || options.approvalTimeoutMs < 1 || options.approvalTimeoutMs > maxTimerMs)) {
    throw new InvalidArgumentError('approvalTimeoutMs', options.approvalTimeoutMs, `an integer from 1 to ${maxTimerMs} (configureTool)`)
  }
  Object.defineProperty(tool, optionsKey, { value: { ...toolOptions(tool), ...options }, enumerable: false, configurable: true })
  return tool
}

/**
 * Marks `tool` idempotent: recovery re-runs it when a crash interrupted it; any other tool that
 * was running becomes an error part ("interrupted by a restart").
 *
 * @example
 * tools: { read: idempotent(tool({ description: 'Read a file', inputSchema, execute })) }
 */
export function idempotent<T extends Tool>(tool: T): T {
  return configureTool(tool, { idempotent: true })
}

/** The options set on `tool` (`idempotent: true` written on the object also counts). */
export function toolOptions(tool: unknown): ToolOptions {
  if (typeof tool !== 'object' || tool === null) return {}
  const set = (tool as Record<symbol, ToolOptions | undefined>)[optionsKey] ?? {}
  return (tool as { idempotent?: unknown }).idempotent === true ? { idempotent: true, ...set } : set
}

export function isIdempotent(tool: unknown): boolean {
  return toolOptions(tool).idempotent === true
}

/**
 * How long a call of `tool` may run before it times out: its own `timeoutMs`, else `defaultMs`
 * (the engine's `toolExecution.timeoutMs`).
 *
 * @example
 * callTimeoutMs(tools.build, config.toolExecution.timeoutMs) // 600_000 for a tool configured so
 */
export function callTimeoutMs(tool: unknown, defaultMs: number): number {
  return toolOptions(tool).timeoutMs ?? defaultMs
}
