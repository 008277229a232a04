/**
 * Parked turns: the one owner of a waiting turn's parking lifecycle in an engine.
 *
 *   waiting (held here: actor, lease) ──parkAfterMs──► parked (row owned by `parkedOwner`, no lease)
 *        ▲                                                  │ a control settles it (approve, deny, abort)
 *        └──────────── taken by the engine that settles it ◄┘
 *
 * A turn that enters a waiting state that parks (`waitOf(state).parks`, the chart's `meta.wait`) arms one timer here; when it
 * fires and the turn still waits, the turn's handle lets go of it (its writes land, its actor
 * stops: `turn.park()`) and its row is handed to the parked owner, with no lease. From then on
 * the engine holds nothing of the turn: no actor, no lease to renew, no timer, and the recovery
 * sweep leaves it alone. The control that settles it takes it (`settle`): claimed from the
 * parked owner, resumed from its rows in the state it waits in, then told the decision.
 *
 * Child turns of a run tree are not parked: their parent, running here, waits on their `done`;
 * unless a host runs each child as a call of its own (`parksChildren`: Restate), which waits for it.
 */
import { turnStateName, waitOf } from '../../machines/turn.machine'
import type { Bus, TurnchartEvent } from '../core/bus'
import { parkedOwner } from '../core/parking'
import type { Store } from '../store/store'
import type { RunningTurn } from '../turn/turn-handle'
import type { RunningTurns } from './running-turns'

export interface ParkedTurnsDeps {
  bus: Pick<Bus, 'subscribe'>
  store: Pick<Store, 'turns'>
  running: RunningTurns
  /** How long a turn waits here before it is parked; 0 parks at once. */
  parkAfterMs: number
  /** Child turns park too (their host, not their parent, waits for them). */
  parksChildren?: boolean
  /** Takes a parked turn into this engine (claimed and resumed, tracked); undefined when it is not parked. */
  take(turnId: string): Promise<RunningTurn | undefined>
}

export class ParkedTurns {
  readonly #deps: ParkedTurnsDeps
  /** The park timers of the turns waiting here, by turn id (and the session each waits in). */
  readonly #timers = new Map<string, { timer: NodeJS.Timeout; sessionId: string }>()
  /** Parkings in flight: a control on the turn waits for its row to be the parked owner's. */
  readonly #parking = new Map<string, Promise<void>>()
  /** Turns a control is being applied to: not parked meanwhile. */
  readonly #settling = new Set<string>()
  readonly #unsubscribe: () => void
  #closed = false

  constructor(deps: ParkedTurnsDeps) {
    this.#deps = deps
    this.#unsubscribe = deps.bus.subscribe((event) => this.#heard(event))
  }

  /** The timers this engine holds for waiting turns (what a parked turn no longer has). */
  get timers(): number {
    return this.#timers.size
  }

  /**
   * Applies a control (`apply`) to a parked turn, in this engine: the turn is taken first
   * (claimed from the parked owner, resumed where it waits). Resolves false when the turn is not
   * parked (it runs somewhere, or ended), true once `apply` ran.
   *
   * @example
   * await parked.settle(turnId, (turn) => turn.approve(callId))
   */
  async settle(turnId: string, apply: (turn: RunningTurn) => Promise<void> | void): Promise<boolean> {
    await this.#parking.get(turnId)
    this.#settling.add(turnId)
    this.#disarm(turnId)
    try {
      const turn = await this.#deps.take(turnId)
      if (!turn) return false
      await apply(turn)
      return true
    } finally {
      this.#settling.delete(turnId)
      // Still waiting (one call of several decided): its wait here starts again.
      const turn = this.#deps.running.find(turnId)
      if (turn && waitOf(turnStateName(turn.actor.getSnapshot()))?.parks) this.#arm(turn.id, turn.sessionId)
    }
  }

  /** The parking of `turnId` while it is in flight (a control waits for it, then takes the parked turn). */
  parking(turnId: string): Promise<void> | undefined {
    return this.#parking.get(turnId)
  }

  /**
   * Parks every turn waiting here now, whatever its wait so far (`close()`: a waiting turn is
   * left parked, for the control that settles it on any engine, not released for a sweep to claim).
   */
  async parkAll(): Promise<void> {
    await Promise.all([...this.#timers.keys()].map((turnId) => this.#park(turnId)))
  }

  close(): void {
    this.#closed = true
    this.#unsubscribe()
    for (const { timer } of this.#timers.values()) clearTimeout(timer)
    this.#timers.clear()
  }

  /** A turn's status says where it is: waiting in a parkable state arms its timer, anything else disarms it. */
  #heard(event: TurnchartEvent): void {
    if (event.type !== 'session.status') return
    const { status } = event
    if (status.type === 'idle') {
      for (const [turnId, armed] of this.#timers) if (armed.sessionId === event.sessionId) this.#disarm(turnId)
      return
    }
    if (status.type === 'busy' && waitOf(status.state)?.parks && (event.parentTurnId === undefined || this.#deps.parksChildren)) this.#arm(status.turnId, event.sessionId)
    else this.#disarm(status.turnId)
  }

  #arm(turnId: string, sessionId: string): void {
    if (this.#closed || this.#settling.has(turnId)) return
    this.#disarm(turnId)
    const timer = setTimeout(() => void this.#park(turnId), this.#deps.parkAfterMs)
    timer.unref()
    this.#timers.set(turnId, { timer, sessionId })
  }

  #disarm(turnId: string): void {
    const armed = this.#timers.get(turnId)
    if (!armed) return
    clearTimeout(armed.timer)
    this.#timers.delete(turnId)
  }

  /** Lets go of the turn if it still waits here: its handle parks it, then its row goes to the parked owner. */
  #park(turnId: string): Promise<void> {
    this.#disarm(turnId)
    const turn = this.#deps.running.find(turnId)
    if (!turn || this.#settling.has(turnId) || this.#parking.has(turnId)) return this.#parking.get(turnId) ?? Promise.resolve()
    // The row goes to the parked owner, fenced on this engine's claim (a turn another engine took
    // meanwhile stays theirs). If the database is unreachable the row keeps this engine's lease,
    // which runs out: recovery resumes the turn.
    const parking = turn
      .park(async (fence) => (await this.#deps.store.turns.claim(turnId, fence, parkedOwner, null)) !== null)
      .then(() => undefined)
      .catch(() => undefined)
      .finally(() => this.#parking.delete(turnId))
    this.#parking.set(turnId, parking)
    return parking
  }
}
