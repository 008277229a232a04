/**
 * The engine's listening connection (PostgreSQL notifications, src/store/postgres/notifications.ts)
 * cut to what each consumer asked for: the control poller hears of requests for turns, the
 * remote control calls of handled requests and ended turns, the prompt queue of sessions whose
 * turn ended, the web edge's resumed streams of a session's new rows. Each consumer declares its
 * feed's interface itself and knows nothing of PostgreSQL; without a listener (SQLite, memory,
 * notifications off) there is no feed and each polls, as it always does anyway.
 */
import type { ControlRequestFeed } from '../control/control-poller'
import type { ControlOutcomeFeed } from '../control/remote-control'
import type { SessionChangeFeed } from '../conversation/prompt-queue'
import type { StoreNotifications } from '../store/postgres/notifications'

export interface StoreFeeds {
  controlRequests: ControlRequestFeed
  controlOutcomes: ControlOutcomeFeed
  sessions: SessionChangeFeed
  rows: StoredRows
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
 * An engine's listening connection, for turnchart's own code above the engine (the web edge's
 * resumed streams) and for tests: kept beside the engine rather than on the `Engine` interface,
 * which is the app's API and has no use for it. Keyed by the engine object (typed `object`:
 * engine.ts imports the control calls, which import this file).
 */
const listeners = new WeakMap<object, { notifications: StoreNotifications; feeds: StoreFeeds }>()

export function registerNotifications(engine: object, notifications: StoreNotifications, feeds: StoreFeeds): void {
  listeners.set(engine, { notifications, feeds })
}

/**
 * The feed of a session's stored rows for `engine`, undefined when it does not listen (SQLite,
 * a `MemoryStore`, `notifications: false`, a Kysely instance without a listening URL).
 *
 * @example
 * pollTurnStream(engine, turn, { changes: storedRowsOf(engine) })
 */
export function storedRowsOf(engine: object): StoredRows | undefined {
  return listeners.get(engine)?.feeds.rows
}

/** The engine's listening connection, if any (tests end its backend to check reconnection). */
export function notificationsOf(engine: object): StoreNotifications | undefined {
  return listeners.get(engine)?.notifications
}
