/**
 * The turns one engine runs, one per session: tracked from their start until they settle,
 * and their leases renewed while they move, so that no other engine takes them over. A turn
 * whose lease could not be renewed belongs to another engine now: it stops here. A turn that
 * stopped moving is stalled: it stops here too, and its lease is let go for recovery.
 */
import { TurnOwnershipLostError } from '../core/errors'
import type { TurnFence, TurnStore } from '../store/store'
import type { RunningTurn } from '../turn/turn-handle'
import type { Stall } from '../turn/stall-watch'
import type { TurnsHere } from '../turn/recovery/recover-turns'

/** Who follows the running turns: the control poller (polls only while some run), the queue (starts the next prompt). */
export interface RunningTurnsWatcher {
  /** Whether any turn runs here now. */
  busy?(busy: boolean): void
  /** A turn ended: the session's next queued prompt may start. */
  ended?(sessionId: string): void
}

export class RunningTurns implements TurnsHere {
  readonly #bySession = new Map<string, RunningTurn>()
  readonly #watchers: RunningTurnsWatcher[] = []
  /** Turns found stalled here since the engine opened (`engine.stats().stalled`). */
  stalled = 0
  /** Turns a recovery pass of this engine is taking (claimed, not resumed yet). */
  readonly #recovering = new Set<string>()

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

  /**
   * Runs `recover` for `turnId` unless the turn runs here, or another recovery pass of this
   * engine is taking it (then undefined): one life of a turn at a time in an engine, however
   * long a pass takes (a pass slowed by the database may outlast the lease of its claim).
   */
  async recoverOnce<R>(turnId: string, recover: () => Promise<R | undefined>): Promise<R | undefined> {
    if (this.#recovering.has(turnId) || this.find(turnId)) return undefined
    this.#recovering.add(turnId)
    try {
      return await recover()
    } finally {
      this.#recovering.delete(turnId)
    }
  }

  /** The turns whose row exists and whose final row is not being written: what leases and control cover. */
  begun(): RunningTurn[] {
    return this.all().filter((t) => t.begun)
  }
}

/** How the engine keeps its turns' leases: their length, and the margin a turn's work may outlive its bound by before it is stalled. */
export interface LeaseTerms {
  leaseMs: number
  /** Past its work's bound by more than this, a turn that does not move is stalled (stall-watch.ts). */
  stallMarginMs: number
}

/** Lets go of a turn stopped here as stalled, for recovery to resume (recover-turns.ts `letStalledTurnGo`). */
export type LetStalledGo = (turnId: string, fence: TurnFence, stall: Stall) => Promise<void>

/**
 * Every third of a lease: the turns this engine runs that stopped moving are stalled (stopped
 * here, and let go), and the leases of the others renewed. A lease follows progress: a turn is
 * renewed only while it moves or its work is within its bound (stall-watch.ts). Returns the stop.
 *
 * @example
 * const stop = keepLeases(store.turns, turns, owner, { leaseMs: 30_000, stallMarginMs: 30_000 }, letGo)
 */
export function keepLeases(turnStore: Pick<TurnStore, 'renewLeases'>, turns: RunningTurns, owner: string, terms: LeaseTerms, letGo: LetStalledGo): () => void {
  const { leaseMs, stallMarginMs } = terms
  const renewal = setInterval(() => {
    const now = Date.now()
    for (const turn of turns.all()) {
      const stall = turn.stalled(now, stallMarginMs)
      if (!stall) continue
      const { fence } = turn
      turns.stalled++
      turn.stall(stall)
      void letGo(turn.id, fence, stall).catch(() => undefined) // (unanswered: its lease runs out, nothing renews it)
    }
    const begun = turns.begun()
    turnStore.renewLeases(begun.map((t) => ({ id: t.id, epoch: t.fence.epoch })), owner, now + leaseMs).then(
      (renewed) => {
        for (const turn of begun) if (!renewed.has(turn.id) && turn.begun) turn.lose(new TurnOwnershipLostError(turn.id, owner, 'its lease could not be renewed'))
      },
      () => undefined, // the database is unreachable: the next renewal tries again
    )
  }, Math.max(50, Math.floor(leaseMs / 3)))
  renewal.unref()
  return () => clearInterval(renewal)
}
