/**
 * The circuits' change mark on PostgreSQL (`CircuitStore.changeMark`, table-changes.ts): another
 * engine's change of a circuit notifies (`m:<model>`, notify-triggers.ts), so while the engine's
 * listener hears, a count of what it heard changes with every such write, and a step reads a
 * circuit again only after one. While it does not listen (connecting, an outage, no listener at
 * all) nothing can be known: there is no figure, and every request reads.
 *
 * What a notification's delay costs: a request sent in the milliseconds between another
 * engine's commit and its notification sees the circuit as it was. Circuits are advisory (a
 * request they let through at worst meets the failing provider once more), so that is allowed.
 */
import type { StoreNotifications } from '../store-notifications'

export class HeardCircuits {
  #listener: Pick<StoreNotifications, 'listening'> | undefined
  #heard = 0

  /** Counts what `notifications` hears from now: circuits' changes, and anything missed while it did not listen. */
  follow(notifications: StoreNotifications): StoreNotifications {
    this.#listener = notifications
    notifications.subscribe((change) => {
      if (change.kind === 'circuit' || change.kind === 'missed') this.#heard++
    })
    return notifications
  }

  /** `TableChanges`'s figure of the other connections' writes: equal figures, no circuit changed between them; undefined while not listening. */
  figure(): number | undefined {
    return this.#listener?.listening ? this.#heard : undefined
  }
}
