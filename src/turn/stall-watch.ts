/**
 * Whether a running turn still moves. A live engine renews the lease of every turn it runs; a
 * turn whose work hangs (a promise that never settles: a write, a request, a tool) would hold
 * its lease, and so its session, for as long as the process lives. So a lease follows progress:
 * the turn moves while it tells events (a delta, a part, a transition, a storage wait); while it
 * does not, its work must be within the bound its state has in the chart (`workOf`: a model
 * stream's idle timeout, the step's tool timeouts, a retry's delay, `storage.outageMs`), and the
 * write its queue runs within `storage.outageMs`. A turn past a bound plus a margin is stalled:
 * its engine stops it and lets it go for recovery (src/engine/running-turns.ts).
 */
import type { Actor } from 'xstate'
import { turnStateName, workOf, type TurnMachine } from '../../machines/turn.machine'
import type { TurnStall, WorkMeaning } from '../../machines/turn.types'
import { callTimeoutMs } from '../tools/tool-options'
import type { TurnScope } from './turn-scope'
import type { TurnMessages } from './turn-messages'

/** A turn found stalled: where, on what, since when it had not moved, and the bound that ran out. */
export type Stall = TurnStall

/** What the watch reads of its turn: all of it in memory, nothing of the database. */
export interface StallWatchPorts {
  /** The chart's state now and the retry delay in its context. */
  now(): { state: string; retryDelayMs: number }
  /** The turn's events told so far. */
  readonly events: { readonly emitted: number }
  /** Its write queue: since when its current job runs. */
  readonly queue: { readonly runningSince: number | null }
  /** The bounds of its work (its configuration). */
  readonly bounds: {
    outageMs: number
    streamIdleTimeoutMs: number
    /** The longest timeout of the step's tool calls. */
    toolsTimeoutMs(): number
  }
}

/** The write a queue runs: what a stalled write is called. */
const aWrite = 'a write to the database'

export class StallWatch {
  readonly #ports: StallWatchPorts
  /** The event count last seen, and when it was seen to change (or the watch began). */
  #seen: number
  #movedAt: number

  constructor(ports: StallWatchPorts, now: number) {
    this.#ports = ports
    this.#seen = ports.events.emitted
    this.#movedAt = now
  }

  /**
   * The turn's stall at `now`: its queue's write, or its state's work, past the bound plus
   * `marginMs` without the turn moving; undefined while it moves, waits on a person or the
   * world (a waiting state), or is within its bound. Call it at an interval (each lease renewal):
   * a change of the event count since the last call is a move at `now`.
   *
   * @example
   * const stall = watch.check(Date.now(), leaseMs)
   */
  check(now: number, marginMs: number): Stall | undefined {
    const ports = this.#ports
    const emitted = ports.events.emitted
    if (emitted !== this.#seen) {
      this.#seen = emitted
      this.#movedAt = now
    }
    const { state, retryDelayMs } = ports.now()
    const { outageMs } = ports.bounds
    const writing = ports.queue.runningSince
    if (writing !== null && now - writing > outageMs + marginMs) return { state, waitingOn: aWrite, since: writing, boundMs: outageMs }
    const work = workOf(state)
    if (!work) return undefined
    const boundMs = this.#boundOf(work, retryDelayMs)
    return now - this.#movedAt > boundMs + marginMs ? { state, waitingOn: work.label, since: this.#movedAt, boundMs } : undefined
  }

  #boundOf(work: WorkMeaning, retryDelayMs: number): number {
    const { bounds } = this.#ports
    switch (work.boundBy) {
      case 'model':
        return bounds.streamIdleTimeoutMs
      case 'tools':
        return bounds.toolsTimeoutMs()
      case 'retry-delay':
        return retryDelayMs
      case 'storage':
        return bounds.outageMs
    }
  }
}

/**
 * The watch of a running turn: its actor's state, its events, its write queue, and the bounds
 * of its configuration (read once the turn began: a turn is watched only from then).
 *
 * @example
 * const watch = watchTurn(actor, scope, config.storage.outageMs)
 */
export function watchTurn(actor: Actor<TurnMachine>, scope: Pick<TurnScope, 'events' | 'queue' | 'config'> & { messages: Pick<TurnMessages, 'stepTools'> }, outageMs: number): StallWatch {
  const now = () => {
    const snapshot = actor.getSnapshot()
    return { state: turnStateName(snapshot), retryDelayMs: snapshot.context.retryDelayMs }
  }
  const bounds = {
    outageMs,
    get streamIdleTimeoutMs() {
      return scope.config.streamIdleTimeoutMs
    },
    toolsTimeoutMs: () => {
      const { tools, toolExecution } = scope.config
      const of = (name: string) => callTimeoutMs(Object.hasOwn(tools, name) ? tools[name] : undefined, toolExecution.timeoutMs)
      const { stepTools } = scope.messages
      return stepTools.length === 0 ? toolExecution.timeoutMs : Math.max(...stepTools.map((part) => of(part.tool)))
    },
  }
  return new StallWatch({ now, events: scope.events, queue: scope.queue, bounds }, Date.now())
}
