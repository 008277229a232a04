/**
 * What every route of the chat handler shares: the engine, the app's options and hooks behind
 * their boundaries (`authorize`, `newSession`), the JSON answers, and the stream of a turn
 * (a dropped client aborts it when so configured).
 */
import type { UIMessage } from 'ai'
import type { TurnchartEvent } from '../core/bus'
import { ChatAccessDeniedError, HookError, serializeError } from '../core/errors'
import type { Engine } from '../engine/engine'
import { toUIMessageStreamResponse, type TurnRef } from '../ui-stream/to-ui-message-stream'
import type { TurnChunks } from '../ui-stream/turn-chunks'
import type { ChatHandlerOptions, NewChatSession } from './chat-options'
import { followHandedOffTurn } from './poll-turn'

/**
 * The default `maxBodyBytes`: 32 MiB. `useChat` sends a file as a base64 `data:` URL (4/3 of its
 * size) inside the JSON body, with the whole conversation: this fits two attachments at the
 * engine's default `maxFileBytes` (10 MB, 13.4 MB each as base64) plus the text, and refuses
 * anything that could not be one chat message.
 */
export const defaultMaxBodyBytes = 32 * 1024 * 1024

export class ChatContext {
  readonly headers: Record<string, string>
  readonly maxBodyBytes: number
  readonly steerWhenBusy: boolean
  readonly #abortOnDisconnect: boolean

  constructor(
    readonly engine: Engine,
    readonly options: ChatHandlerOptions,
  ) {
    this.headers = options.headers ?? {}
    this.maxBodyBytes = options.maxBodyBytes ?? defaultMaxBodyBytes
    this.steerWhenBusy = options.whenBusy === 'steer'
    this.#abortOnDisconnect = (options.onDisconnect ?? 'abort') === 'abort'
  }

  json(status: number, body: unknown): Response {
    return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...this.headers } })
  }

  /** `{ error: { name, message, ... } }` with `status`. */
  error(status: number, error: unknown): Response {
    return this.json(status, { error: serializeError(error) })
  }

  invalid(message: string): Response {
    return this.json(400, { error: { name: 'InvalidRequest', message } })
  }

  denied(chatId: string): Response {
    return this.error(403, new ChatAccessDeniedError(chatId))
  }

  noContent(): Response {
    return new Response(null, { status: 204, headers: this.headers })
  }

  /** The app's verdict on this request for this chat: `true` or an identity lets it through (`by`: that identity). */
  async authorization(request: Request, chatId: string): Promise<{ ok: boolean; by?: string }> {
    const { authorize } = this.options
    if (!authorize) return { ok: true }
    let answer: unknown
    try {
      answer = await authorize(request, chatId)
    } catch (error) {
      throw new HookError('authorize', error)
    }
    if (answer === true) return { ok: true }
    const by = (answer as { by?: unknown } | null)?.by
    if (typeof answer === 'object' && typeof by === 'string' && by !== '') return { ok: true, by }
    return { ok: false }
  }

  async authorized(request: Request, chatId: string): Promise<boolean> {
    return (await this.authorization(request, chatId)).ok
  }

  /** The options of the session a new chat gets, from the app's `newSession`. */
  async newSessionOptions(request: Request, chatId: string): Promise<NewChatSession> {
    const { newSession } = this.options
    if (!newSession) return {}
    try {
      const answer = await newSession(request, chatId)
      return { ...(answer?.title !== undefined ? { title: answer.title } : {}), ...(answer?.metadata !== undefined ? { metadata: answer.metadata } : {}) }
    } catch (error) {
      throw new HookError('newSession', error)
    }
  }

  /**
   * Streams `turn`; a dropped client aborts it when so configured (only while it streams). A
   * turn this engine runs is read from itself (its replay: the turn so far); any other from the
   * engine's bus.
   */
  stream(request: Request, turn: TurnRef, from: { replay: boolean; messages?: UIMessage[] }, signal?: AbortSignal): Response {
    const { engine } = this
    const running = engine.activeTurn(turn.sessionId)
    const here = running?.id === turn.id ? running : undefined
    const stopAborting = this.#abortOnDisconnect ? abortWhenGone(engine, request, turn) : () => undefined
    const streamSignal = anySignal(request.signal, signal)
    return toUIMessageStreamResponse(here ?? engine, here ?? turn, {
      replay: from.replay && here !== undefined,
      originalMessages: from.messages,
      signal: streamSignal,
      headers: this.headers,
      // This engine handed the turn off (a deploy): the response goes on through the new owner's rows.
      ...(here
        ? { afterHandoff: (chunks: TurnChunks, sent: TurnchartEvent[]) => followHandedOffTurn(engine, here, chunks, sent, { intervalMs: this.options.pollIntervalMs, signal: streamSignal }) }
        : {}),
      onEnd: stopAborting,
    })
  }
}

/** Aborts `turn` when its client goes (while it streams); returns what stops that at the stream's end. */
function abortWhenGone(engine: Engine, request: Request, turn: TurnRef): () => void {
  let streaming = true
  const onClientGone = () => {
    if (!streaming) return
    let active
    try {
      active = engine.activeTurn(turn.sessionId)
    } catch {
      return // closed: a stream that follows a handed-off turn outlives the engine; nothing runs here to abort
    }
    if (active?.id === turn.id) active.abort('the client stopped the stream')
  }
  request.signal.addEventListener('abort', onClientGone, { once: true })
  return () => {
    streaming = false
    request.signal.removeEventListener('abort', onClientGone)
  }
}

function anySignal(...signals: Array<AbortSignal | undefined>): AbortSignal {
  const present = signals.filter((s): s is AbortSignal => s !== undefined)
  return present.length === 1 ? present[0] : AbortSignal.any(present)
}
