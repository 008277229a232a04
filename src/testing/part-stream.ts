/**
 * Recorded stream parts as the `ReadableStream` a model's `doStream` returns: all of them at
 * once (a recording has no timing to keep), then the stream's end as recorded.
 */
import type { StreamPart } from './stored-stream'

/**
 * - `close`: the stream ends normally;
 * - `error`: the stream fails with `error` (as a broken connection does);
 * - `hang`: the stream stays open until its reader cancels it (the recording was cut off there
 *   by an abort: the run aborts too, or stops reading).
 */
export type StreamEnd = { type: 'close' } | { type: 'error'; error: unknown } | { type: 'hang' }

/**
 * @example
 * const { stream } = { stream: partStream([{ type: 'stream-start', warnings: [] }, …], { type: 'close' }) }
 */
export function partStream(parts: readonly StreamPart[], end: StreamEnd): ReadableStream<StreamPart> {
  return new ReadableStream<StreamPart>({
    start(controller) {
      // The caller builds the parts for each call, so a consumer that changes one changes no recording.
      for (const part of parts) controller.enqueue(part)
      if (end.type === 'close') controller.close()
      else if (end.type === 'error') controller.error(end.error)
    },
  })
}
