/**
 * The last published status of each session this engine runs a turn in (`engine.status`):
 * kept from the bus's `session.status` events; an idle session is not kept. While the turn's
 * write waits on the database (`storage.waiting` until `storage.resumed`) it says so (`storage`).
 */
import type { Bus } from '../core/bus'
import type { SessionStatus } from '../core/types'

/**
 * @example
 * const status = sessionStatuses(bus)
 * status('ses_1') // { type: 'busy', turnId, state: 'streaming' }
 */
export function sessionStatuses(bus: Pick<Bus, 'subscribe'>): (sessionId: string) => SessionStatus {
  const statuses = new Map<string, SessionStatus>()
  bus.subscribe((event) => {
    const current = statuses.get(event.sessionId)
    if (event.type === 'storage.waiting' && current && current.type !== 'idle') statuses.set(event.sessionId, { ...current, storage: { operation: event.operation, since: event.since } })
    if (event.type === 'storage.resumed' && current && current.type !== 'idle') {
      const { storage: _, ...rest } = current
      statuses.set(event.sessionId, rest)
    }
    if (event.type !== 'session.status') return
    if (event.status.type === 'idle') statuses.delete(event.sessionId)
    else statuses.set(event.sessionId, event.status)
  })
  return (sessionId) => statuses.get(sessionId) ?? { type: 'idle' }
}
