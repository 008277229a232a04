/**
 * The options of `createChatHandler` and what its hooks answer (src/ui/chat-handler.ts has the
 * routes they apply to).
 */
import type { SessionMetadata } from '../core/types'

/** The options of a session the handler creates for a new chat (from `newSession`). */
export interface NewChatSession {
  title?: string
  /** The app's data about the chat, e.g. `{ owner: user.id }` for `authorize` to read later. */
  metadata?: SessionMetadata
}

/** What `authorize` answers: `true`, or the identity of who is let through (`{ by }`, a non-empty string); anything else refuses. */
export type ChatAuthorization = boolean | { by: string }

export interface ChatHandlerOptions {
  /**
   * Who may use a chat: called before every route with the request and the chat id (on a POST,
   * after the body is read, since the id is in it); `true` lets the request through, anything
   * else answers **403** `ChatAccessDeniedError` and nothing happens (no session created, no turn
   * started, no message read). May be async. A throw answers 500 (the error goes to `onError`).
   * Without it every chat is open to anyone who knows its id.
   *
   * In place of `true` it may return an identity, `{ by }` (`by`: a non-empty string, a user id or
   * an email): the request is let through, and the approvals and denials it carries are stored
   * with that identity as their `by` (the call's receipt, `engine.approvalReceipts`). (A bare
   * string is not an identity: `'no'` must not let anyone in.)
   */
  authorize?: (request: Request, chatId: string) => ChatAuthorization | Promise<ChatAuthorization>
  /**
   * The title and metadata of the session the handler creates for a new chat (its first POST),
   * e.g. `{ metadata: { owner: user.id } }`. May be async. A throw answers 500, nothing created.
   */
  newSession?: (request: Request, chatId: string) => NewChatSession | undefined | Promise<NewChatSession | undefined>
  /**
   * The largest request body read, in bytes (default `defaultMaxBodyBytes`, 32 MiB): counted
   * while the body streams in; past it the answer is **413** `RequestTooLargeError` and the rest
   * is not read.
   */
  maxBodyBytes?: number
  /**
   * What a client that drops a stream means. `'abort'` (default): the turn is aborted (that is
   * how `useChat`'s `stop()` reaches the server). `'detach'`: the stream ends and the turn goes
   * on, so a page that reloads can resume it (`useChat({ resume: true })`); the page then stops
   * a turn with `DELETE <api>/<chatId>/stream`. A server cannot tell a reload from a stop, which
   * is why resuming pages need `'detach'`.
   */
  onDisconnect?: 'abort' | 'detach'
  /**
   * A user message POSTed while the chat's turn runs (here or on another engine): `'reject'`
   * (default) answers **409** `SessionBusyError`; `'steer'` hands it to the running turn
   * (`engine.steer`): stored at once, the model sees it at the turn's next step boundary, and the
   * turn's stream shows it (a `data-steered` part) and goes on. The POST answers **202**
   * `{ steered: { id, turnId } }`. Should the turn end first, the message starts the chat's
   * next turn (`GET <api>/<id>/stream` streams it).
   */
  whenBusy?: 'reject' | 'steer'
  /** Headers added to every response (e.g. CORS). */
  headers?: Record<string, string>
  /**
   * How often a resumed stream of a turn run by another process reads its rows (ms, default 250);
   * with PostgreSQL notifications it also reads them at each write of that process.
   */
  pollIntervalMs?: number
  /**
   * Called with an unexpected error (a `HookError` when `authorize` or `newSession` threw); the
   * client gets a 500 without its details. Its own throw (or rejection) is ignored.
   */
  onError?: (error: unknown) => void
}

/** A request handler, plus `close()` (it holds nothing now: each stream reads its turn, and ends with it or its client). */
export interface ChatHandler {
  (request: Request): Promise<Response>
  close(): void
}
