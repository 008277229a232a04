/**
 * Recorded stream parts as the `ReadableStream` a model's `doStream` returns: each part as it
 * is read (a recording has no timing to keep), then the stream's end as recorded.
 */
import type { StreamPart } from './stored-stream'

/**
 * - `close`: the stream ends normally;
 * - `error`: the stream fails with `error` (as a broken connection does), after its parts;
 * - `hang`: the stream stays open until its reader cancels it (the recording was cut off there
 *   by an abort: the run aborts too, or stops reading).
 */
export type StreamEnd = { type: 'close' } | { type: 'error'; error: unknown } | { type: 'hang'; onHang?: () => void }

/**
 * @example
 * const stream = partStream([{ type: 'stream-start', warnings: [] }, { type: 'text-start', id: 't' }, …], { type: 'close' })
 */
export function partStream(parts: readonly StreamPart[], end: StreamEnd): ReadableStream<StreamPart> {
  let next = 0
  let cancelled: () => void = () => {}
  return new ReadableStream<StreamPart>(
    {
      // One part per read: erroring a stream drops what is still queued, so the error waits
      // until every part before it was read. The caller builds the parts for each call, so a
      // consumer that changes one changes no recording.
      pull(controller) {
        if (next < parts.length) return controller.enqueue(parts[next++])
        if (end.type === 'close') return controller.close()
        if (end.type === 'error') return controller.error(end.error)
        end.onHang?.()
        return new Promise<void>((resolve) => (cancelled = resolve))
      },
      cancel() {
        cancelled()
      },
    },
    { highWaterMark: 0 },
  )
}
