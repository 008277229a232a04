/**
 * The turns one engine runs, one per session: tracked from their start until they settle,
 * and their leases renewed while they run, so that no other engine takes them over. A turn
 * whose lease could not be renewed belongs to another engine now: it stops here.
 */
import { TurnOwnershipLostError } from '../core/errors'
import type { TurnStore } from '../store/store'
import type { RunningTurn } from '../turn/turn-handle'

/** Who follows the running turns: the control poller (polls only while some run), the queue (starts the next prompt). */
export interface RunningTurnsWatcher {
  /** Whether any turn runs here now. */
  busy?(busy: boolean): void
  /** A turn ended: the session's next queued prompt may start. */
  ended?(sessionId: string): void
}

export class RunningTurns {
  readonly #bySession = new Map<string, RunningTurn>()
  readonly #watchers: RunningTurnsWatcher[] = []

  /** Adds a watcher (the parts that follow the turns are made after this registry). */
  watch(watcher: RunningTurnsWatcher): void {
    this.#watchers.push(watcher)
  }

  /** Holds `turn` until it settles (its runtime calls `untrack` before `done` settles). */
  track(turn: RunningTurn): RunningTurn {
    this.#bySession.set(turn.sessionId, turn)
    for (const watcher of this.#watchers) watcher.busy?.(true)
    turn.done.then(
      () => {
        for (const watcher of this.#watchers) watcher.ended?.(turn.sessionId)
      },
      () => undefined,
    )
    return turn
  }

  untrack(turn: RunningTurn): void {
    if (this.#bySession.get(turn.sessionId) === turn) this.#bySession.delete(turn.sessionId)
    for (const watcher of this.#watchers) watcher.busy?.(this.#bySession.size > 0)
  }

  ofSession(sessionId: string): RunningTurn | undefined {
    return this.#bySession.get(sessionId)
  }

  find(turnId: string): RunningTurn | undefined {
    return this.all().find((t) => t.id === turnId)
  }

  all(): RunningTurn[] {
    return [...this.#bySession.values()]
  }

  /** The turns whose row exists and whose final row is not being written: what leases and control cover. */
  begun(): RunningTurn[] {
    return this.all().filter((t) => t.begun)
  }
}

/**
 * Renews the leases of the turns this engine runs every third of a lease. Returns the stop.
 *
 * @example
 * const stop = renewLeases(store.turns, turns, owner, config.leaseMs)
 */
export function renewLeases(turnStore: Pick<TurnStore, 'renewLeases'>, turns: RunningTurns, owner: string, leaseMs: number): () => void {
  const renewal = setInterval(() => {
    const begun = turns.begun()
    turnStore.renewLeases(begun.map((t) => ({ id: t.id, epoch: t.fence.epoch })), owner, Date.now() + leaseMs).then(
      (renewed) => {
        for (const turn of begun) if (!renewed.has(turn.id) && turn.begun) turn.lose(new TurnOwnershipLostError(turn.id, owner, 'its lease could not be renewed'))
      },
      () => undefined, // the database is unreachable: the next renewal tries again
    )
  }, Math.max(50, Math.floor(leaseMs / 3)))
  renewal.unref()
  return () => clearInterval(renewal)
}
