/**
 * The engine's listening connection (PostgreSQL notifications, src/store/postgres/notifications.ts)
 * cut to what each consumer asked for: the control poller hears of requests for turns, the
 * remote control calls of handled requests and ended turns, the prompt queue of sessions whose
 * turn ended, the web edge's resumed streams of a session's new rows, recovery of the turns
 * other engines released (a handoff). Each consumer declares its
 * feed's interface itself and knows nothing of PostgreSQL; without a listener (SQLite, memory,
 * notifications off) there is no feed and each polls, as it always does anyway.
 */
import type { ControlRequestFeed } from '../control/control-poller'
import type { ControlOutcomeFeed } from '../control/remote-control'
import type { SessionChangeFeed } from '../conversation/prompt-queue'
import type { StoreChange, StoreNotifications } from '../store/postgres/notifications'

export interface StoreFeeds {
  controlRequests: ControlRequestFeed
  controlOutcomes: ControlOutcomeFeed
  sessions: SessionChangeFeed
  rows: StoredRows
  released: ReleasedTurns
}

/** Turns their owner released unfinished (a handoff, a clean close): recovery takes them at once. */
export interface ReleasedTurns {
  /** `listener(turnId)` for each released turn; `listener()` when some may have been missed. */
  subscribe(listener: (turnId?: string) => void): () => void
}

/** The web edge's feed (src/ui/poll-turn.ts `StoredRowsFeed`): a session's rows, while followed. */
export interface StoredRows {
  follow(sessionId: string, onChange: () => void): () => void
}

/**
 * @example
 * const feeds = notifications && storeFeeds(notifications)
 * startControlPoller({ ..., feed: feeds?.controlRequests })
 */
export function storeFeeds(notifications: StoreNotifications): StoreFeeds {
  return {
    controlRequests: {
      subscribe: (listener) =>
        notifications.subscribe((change) => {
          if (change.kind === 'control') listener(change.turnId)
          else if (change.kind === 'missed') listener()
        }),
    },
    controlOutcomes: {
      subscribe: (listener) =>
        notifications.subscribe((change) => {
          if (change.kind === 'handled') listener({ handled: change.controlId })
          else if (change.kind === 'session') listener({ session: change.sessionId })
          else if (change.kind === 'missed') listener()
        }),
    },
    sessions: {
      subscribe: (listener) =>
        notifications.subscribe((change) => {
          if (change.kind === 'session') listener(change.sessionId)
          else if (change.kind === 'missed') listener()
        }),
    },
    released: {
      subscribe: (listener) =>
        notifications.subscribe((change) => {
          if (change.kind === 'released') listener(change.turnId)
          else if (change.kind === 'missed') listener()
        }),
    },
    rows: {
      follow(sessionId, onChange) {
        const release = notifications.watch(sessionId)
        const unsubscribe = notifications.subscribe((change) => {
          if ((change.kind === 'session' && change.sessionId === sessionId) || change.kind === 'missed') onChange()
        })
        return () => {
          unsubscribe()
          release()
        }
      },
    },
  }
}

/**
 * The engine's listening connection as it is handed to the code above the engine (the web
 * edge's resumed streams follow a session's rows through it; tests end its backend), without
 * the means to close it: the engine owns its lifecycle.
 */
export interface EngineNotifications extends StoredRows {
  /** Whether the connection listens now. */
  readonly listening: boolean
  /** The server process of the listening connection (diagnostics). */
  readonly backendPid: number | undefined
  /** Resolves once listening (true), or false after `timeoutMs` or at close. */
  whenListening(timeoutMs: number): Promise<boolean>
  /** Calls `listener` with each change the store pushes; returns the unsubscribe. */
  subscribe(listener: (change: StoreChange) => void): () => void
}

/**
 * @example
 * const engine = { ..., notifications: notifications && engineNotifications(notifications, feeds.rows) }
 */
export function engineNotifications(notifications: StoreNotifications, rows: StoredRows): EngineNotifications {
  return {
    get listening() {
      return notifications.listening
    },
    get backendPid() {
      return notifications.backendPid
    },
    whenListening: (timeoutMs) => notifications.whenListening(timeoutMs),
    subscribe: (listener) => notifications.subscribe(listener),
    follow: (sessionId, onChange) => rows.follow(sessionId, onChange),
  }
}
