/**
 * The wrapper every engine method's database work goes through: a failure that passes (the
 * database restarting, busy, full) is waited out and the call run again, up to
 * `storage.outageMs`; after `close()` it throws `EngineClosedError` (instead of the driver's
 * "destroyed" error), and any error that is not already turnchart's becomes a `StorageError`
 * naming the operation, with the driver's error as its `cause`.
 */
import { EngineClosedError, StorageError, TurnchartError } from '../core/errors'
import { OutageRetry, type OutagePolicy } from '../store/outage'

/**
 * Runs one database call of an engine method, its errors as the engine reports them. `once`:
 * the call must not be run again after a failure (it awaits work started elsewhere, or writes a
 * file), so an outage is not waited out.
 */
export type EngineCall = <T>(operation: string, run: () => Promise<T>, options?: { once?: boolean }) => Promise<T>

/**
 * The two guards of the engine's calls: `requireOpen` for a synchronous call, `call` for one
 * that does database work.
 *
 * @example
 * const { requireOpen, call } = engineCalls(() => closed)
 * const sessions = await call('list sessions', () => store.sessions.list())
 */
export function engineCalls(isClosed: () => boolean, outage: OutagePolicy = { outageMs: 0 }): { requireOpen(operation: string): void; call: EngineCall } {
  const requireOpen = (operation: string) => {
    if (isClosed()) throw new EngineClosedError(operation)
  }
  const call: EngineCall = async function call<T>(operation: string, run: () => Promise<T>, options: { once?: boolean } = {}): Promise<T> {
    if (isClosed()) throw new EngineClosedError(operation)
    try {
      return await new OutageRetry(options.once ? { outageMs: 0 } : outage).run(operation, run, () => !isClosed())
    } catch (error) {
      if (TurnchartError.isTurnchartError(error)) throw error
      // close() may have destroyed the connection while this call was waiting for it.
      if (isClosed()) throw new EngineClosedError(operation)
      throw new StorageError(operation, error)
    }
  }
  return { requireOpen, call }
}

/**
 * `error` as turnchart reports it: a turnchart error as is, anything else (the driver's) as a
 * `StorageError` of `operation` with the original as `cause`.
 *
 * @example
 * throw asStorageError('open the database', error)
 */
export function asStorageError(operation: string, error: unknown): Error {
  return TurnchartError.isTurnchartError(error) ? error : new StorageError(operation, error)
}
