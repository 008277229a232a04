/**
 * A turn as an AI SDK UI message stream (the protocol `useChat` reads), built with the SDK's own
 * `createUIMessageStream` / `createUIMessageStreamResponse`: a transform of the turn's events
 * (`TurnChunks`), read from the engine's bus (`engine.subscribe`) or from the turn itself
 * (`turn.subscribe`, which can replay the turn so far: `turn.toUIMessageStreamResponse()`, a
 * page that reattaches after a reload).
 */
import { createUIMessageStream, createUIMessageStreamResponse, type UIMessage } from 'ai'
import type { TurnchartEvent } from '../core/bus'
import { EngineClosedError } from '../core/errors'
import type { Turn } from '../turn/turn-handle'
import type { TurnchartUIMessage } from './ui-messages'
import { TurnChunks, type TurnChunk, type TurnStreamEnd } from './turn-chunks'

/** Where turn events come from: `engine.subscribe`, or one turn's own (`turn.subscribe`, which can replay). */
export interface TurnEventSource {
  /** Calls `listener` with every event from now on, synchronously (with `replay`, first the turn so far, if the source keeps it); returns the unsubscribe. */
  subscribe(listener: (event: TurnchartEvent) => void, options?: { replay?: boolean }): () => void
}

export interface TurnStreamOptions {
  /**
   * The stream starts with the turn so far (the source must be the turn itself): each part as
   * it is now, then live. For a page that reattaches after a reload, or a stream started after
   * the turn ended. Without it the stream continues what the page shows (after an approval).
   */
  replay?: boolean
  /**
   * The page's messages (useChat's request body). When the last is an assistant message, the
   * stream continues it under its id (as after an approval); otherwise it starts a new one.
   */
  originalMessages?: UIMessage[]
  /** Ends the stream early (the turn goes on). */
  signal?: AbortSignal
  /** Called once when the stream ends, with why (undefined: ended by `signal`). */
  onEnd?: (end: TurnStreamEnd | undefined) => void
  /**
   * The turn was handed to another engine (`done` rejected with a handed-off
   * `EngineClosedError`): the stream goes on with this, which sends the rest into `chunks`
   * (`sent`: the turn so far as the stream had it). Absent: the stream ends with the error.
   */
  afterHandoff?: (chunks: TurnChunks, sent: TurnchartEvent[]) => Promise<void>
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
 * the turn produces anything you want sent: call it in the tick `engine.prompt` returns (or
 * read from the turn itself with `replay: true`).
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
        const chunks = new TurnChunks(turn.id, turn.sessionId, (chunk) => writer.write(chunk))
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
        // The replay arrives inside `subscribe`, the live events after it: nothing is lost or sent twice.
        const replayed: TurnchartEvent[] = []
        let live = false
        unsubscribe = events.subscribe(
          (event) => {
            if (!live) replayed.push(event)
            else if (chunks.handle(event)) stop(chunks.end)
          },
          options.replay ? { replay: true } : {},
        )
        live = true
        if (options.replay && chunks.replay(replayed)) return stop(chunks.end)
        turn.done?.catch((error: unknown) => {
          if (chunks.end) return
          if (options.afterHandoff && EngineClosedError.isInstance(error) && error.handedOff) {
            // The turn so far, as this stream sent it (the handed-off turn's replay), then the new owner's rows.
            const sent: TurnchartEvent[] = []
            events.subscribe((event) => sent.push(event), { replay: true })()
            unsubscribe()
            void options.afterHandoff(chunks, sent)
              .catch((failure: unknown) => chunks.fail(failure instanceof Error ? failure.message : String(failure)))
              .finally(() => stop(chunks.end))
            return
          }
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

/** `turn.toUIMessageStreamResponse()`: the turn so far, then live (the engine hands this to every turn). */
export function uiMessageStreamOfTurn(turn: Turn, options: { headers?: Record<string, string> }): Response {
  return toUIMessageStreamResponse(turn, turn, { replay: true, ...options })
}
