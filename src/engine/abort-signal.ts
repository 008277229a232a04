/**
 * The `abortSignal` option of `prompt`: the caller's `AbortSignal` aborts the turn as
 * `turn.abort()` does (already aborted: the turn is aborted at once). The listener goes when
 * the turn ends, so a long-lived signal (a server's shutdown signal) holds no ended turns.
 */
import { InvalidArgumentError } from '../core/errors'
import type { Turn } from '../turn/turn-handle'

/** Throws `InvalidArgumentError` unless `value` is an `AbortSignal` (or undefined). */
export function requireAbortSignal(value: unknown): AbortSignal | undefined {
  if (value === undefined || value instanceof AbortSignal) return value
  throw new InvalidArgumentError('options.abortSignal', value, 'an AbortSignal (from an AbortController, or AbortSignal.timeout(ms))')
}

/**
 * @example
 * abortWithSignal(turn, AbortSignal.timeout(30_000)) // the turn ends aborted after 30 s
 */
export function abortWithSignal(turn: Turn, signal: AbortSignal): void {
  const abort = () => turn.abort(reasonOf(signal.reason))
  if (signal.aborted) return abort()
  signal.addEventListener('abort', abort, { once: true })
  const remove = () => signal.removeEventListener('abort', abort)
  turn.done.then(remove, remove)
}

/** The signal's reason as the turn's abort reason: its message, or "aborted by the prompt's abortSignal". */
function reasonOf(reason: unknown): string {
  if (reason instanceof Error && reason.message) return reason.message
  return typeof reason === 'string' && reason !== '' ? reason : "aborted by the prompt's abortSignal"
}
