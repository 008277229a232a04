/**
 * What a backend that pushes other engines' writes gives the engine (the `notifications`
 * capability of backend.ts; PostgreSQL's LISTEN/NOTIFY in postgres/notifications.ts). A file of
 * its own so that the engine and the backends share it without importing one another.
 */

/** What the store pushed: one change, or that some may have been missed (a reconnect). */
export type StoreChange =
  /** A control request (approve, deny, abort) was stored for the turn. */
  | { kind: 'control'; turnId: string }
  /** The engine running a turn handled the control request. */
  | { kind: 'handled'; controlId: string }
  /** The session's rows changed: one of its turns ended, a queued prompt left its queue, or (watched) anything else. */
  | { kind: 'session'; sessionId: string }
  /** The turn's owner released it unfinished (a handoff, a clean close): another engine may claim it now. */
  | { kind: 'released'; turnId: string }
  /** The model's circuit changed (its failures, opening, probe or hold): read it again before the next request. */
  | { kind: 'circuit'; model: string }
  /** The connection was down: any change may have been missed, look once. */
  | { kind: 'missed' }

export interface StoreNotifications {
  /** Calls `listener` with each change; returns the unsubscribe. A throwing listener is reported, never propagated. */
  subscribe(listener: (change: StoreChange) => void): () => void
  /**
   * Asks every writer to notify each change of the session's rows (parts as they flush, each
   * transition), not only its turns' ends, until the returned release is called. Refreshed
   * while held; a holder that dies stops being counted within `watchTtlMs`.
   */
  watch(sessionId: string): () => void
  /** Whether the connection listens now. */
  readonly listening: boolean
  /** The server process of the listening connection (diagnostics; tests end it with `pg_terminate_backend`). */
  readonly backendPid: number | undefined
  /** Settles with the first connection attempt: true when it listens, false when it failed (it retries on). */
  readonly ready: Promise<boolean>
  /** Resolves once listening (true), or false after `timeoutMs` or at close. */
  whenListening(timeoutMs: number): Promise<boolean>
  /** Ends the connection and every timer; subscribers hear nothing more. */
  close(): Promise<void>
}
