/**
 * A turn as an AI SDK UI message stream (the protocol `useChat` reads), built with the SDK's own
 * `createUIMessageStream` / `createUIMessageStreamResponse` from the events of `engine.subscribe`
 * (or of the turn's own log, for `turn.toUIMessageStreamResponse()`).
 */
import { createUIMessageStream, createUIMessageStreamResponse, type UIMessage } from 'ai'
import type { LiveTurnSnapshot, TurnEventSource } from './live-turns'
import type { TurnchartUIMessage } from './ui-messages'
import { TurnChunkWriter, type TurnChunk, type TurnStreamEnd } from './turn-chunks'

export interface TurnStreamOptions {
  /**
   * What the turn produced before the stream subscribed (`LiveTurns.snapshot`). `replay: true`
   * sends it first (a page reattaching after a reload); otherwise it is only marked as known,
   * so the stream continues a message the page already shows (after an approval).
   */
  from?: LiveTurnSnapshot
  replay?: boolean
  /** The turn had already ended so when `from` was taken: the stream sends `from`, then ends. */
  ended?: TurnStreamEnd
  /**
   * The page's messages (useChat's request body). When the last is an assistant message, the
   * stream continues it under its id (as after an approval); otherwise it starts a new one.
   */
  originalMessages?: UIMessage[]
  /** Ends the stream early (the turn goes on). */
  signal?: AbortSignal
  /** Called once when the stream ends, with why (undefined: ended by `signal`). */
  onEnd?: (end: TurnStreamEnd | undefined) => void
}

/** A running turn, or its id and session. */
export interface TurnRef {
  id: string
  sessionId: string
  /** A `Turn`'s `done`: when it rejects (the turn could not start), the stream ends with the error. */
  done?: Promise<unknown>
}

/**
 * The UI message stream of a turn: text, reasoning, tool input/output/errors, approval requests,
 * step boundaries, then `finish` (completed, or waiting for an approval), `error` (failed) or
 * `abort` (aborted). The chart's state goes as the data part `data-turn-state` (state, attempt,
 * retry deadline; one part, updated in place) and usage as message metadata. Subscribe before
 * the turn produces anything you want sent: call it in the tick `engine.prompt` returns.
 *
 * @example
 * const turn = engine.prompt(sessionId, 'hi')
 * for await (const message of readUIMessageStream({ stream: toUIMessageStream(engine, turn) })) render(message)
 */
export function toUIMessageStream(events: TurnEventSource, turn: TurnRef, options: TurnStreamOptions = {}): ReadableStream<TurnChunk> {
  return createUIMessageStream<TurnchartUIMessage>({
    originalMessages: options.originalMessages as TurnchartUIMessage[] | undefined,
    execute: ({ writer }) =>
      new Promise<void>((resolve) => {
        const chunks = new TurnChunkWriter(turn.id, turn.sessionId, (chunk) => writer.write(chunk))
        let unsubscribe = () => {}
        const stop = (end: TurnStreamEnd | undefined) => {
          unsubscribe()
          options.signal?.removeEventListener('abort', onAbort)
          options.onEnd?.(end)
          resolve()
        }
        const onAbort = () => stop(undefined)
        if (options.signal?.aborted) return stop(undefined)
        options.signal?.addEventListener('abort', onAbort, { once: true })
        // Subscribe and seed in one tick: nothing published in between is lost or sent twice.
        unsubscribe = events.subscribe((event) => {
          if (chunks.handle(event)) stop(chunks.end)
        })
        if (options.from) chunks.seed(options.from, options.replay === true)
        if (options.ended) chunks.finish(options.ended)
        if (chunks.end) return stop(chunks.end)
        turn.done?.catch((error: unknown) => {
          if (chunks.end) return
          chunks.fail(error instanceof Error ? error.message : String(error))
          stop(chunks.end)
        })
      }),
  })
}

/**
 * The same stream as a `Response` (`text/event-stream`, the AI SDK's UI message stream headers).
 *
 * @example
 * // a Next.js route handler
 * export async function POST() { return toUIMessageStreamResponse(engine, engine.prompt(sessionId, 'hi')) }
 */
export function toUIMessageStreamResponse(events: TurnEventSource, turn: TurnRef, options: TurnStreamOptions & { headers?: Record<string, string> } = {}): Response {
  const { headers, ...streamOptions } = options
  return createUIMessageStreamResponse({ stream: toUIMessageStream(events, turn, streamOptions), headers })
}
