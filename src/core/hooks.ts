/**
 * Calling the functions an app supplies (subscribers, the inspector, error reporters, the chat
 * handler's hooks) so that nothing they do reaches the process: a throw, and the rejection of a
 * promise they return (an `async` function), both go to an error reporter. An unhandled
 * rejection ends a Node process by default; a hook must never be able to cause one.
 */

/**
 * Calls `hook` for its effect: a throw or a rejected returned promise goes to `onError`, which
 * is itself guarded (an error reporter is the app's code too).
 *
 * @example
 * callHook(() => listener(event), (error) => report(error))
 */
export function callHook(hook: () => unknown, onError: (error: unknown) => void): void {
  try {
    settleHook(hook(), onError)
  } catch (error) {
    report(onError, error)
  }
}

/**
 * A hook's returned value, when it is a promise, is watched: its rejection goes to `onError`
 * instead of becoming unhandled. Other values are ignored.
 *
 * @example
 * settleHook(inspect(event), report)
 */
export function settleHook(result: unknown, onError: (error: unknown) => void): void {
  if (isThenable(result)) {
    try {
      result.then(undefined, (error: unknown) => report(onError, error))
    } catch (error) {
      report(onError, error) // a hostile thenable whose `then` throws
    }
  }
}

/** True for a promise or any object with a `then` method (what `await` would wait for). */
export function isThenable(value: unknown): value is PromiseLike<unknown> {
  try {
    return (typeof value === 'object' || typeof value === 'function') && value !== null && typeof (value as { then?: unknown }).then === 'function'
  } catch {
    return false // a revoked Proxy
  }
}

function report(onError: (error: unknown) => void, error: unknown): void {
  try {
    settleHook(onError(error), () => undefined)
  } catch {
    // the reporter threw too: nothing is left to tell
  }
}
