/**
 * Unhandled promise rejections, observed: a hook the app supplies must never leave one behind
 * (Node ends the process on the first by default), so tests of hostile hooks collect them.
 */

/**
 * Every unhandled rejection while `run` runs, and one loop turn after it (Node reports an
 * unhandled rejection once the microtasks of the turn that created it have run).
 *
 * @example
 * const unhandled = await unhandledRejectionsDuring(async () => { await turn.done })
 * expect(unhandled).toEqual([])
 */
export async function unhandledRejectionsDuring(run: () => Promise<void>): Promise<unknown[]> {
  const seen: unknown[] = []
  const listener = (reason: unknown) => void seen.push(reason)
  process.on('unhandledRejection', listener)
  try {
    await run()
    await new Promise((resolve) => setImmediate(resolve))
    await new Promise((resolve) => setImmediate(resolve))
  } finally {
    process.off('unhandledRejection', listener)
  }
  return seen
}
