/**
 * The child turns each parent turn of this process waits on, for the host to run (run trees on a
 * host: on Restate, a child turn is a call to its session's object). An `agentTool` call tells of
 * its child as it starts it (or finds it unfinished after a crash); the parent's next
 * `runUntilPause` hands the children over as its pause, and the host runs them.
 */
import type { ChildHost } from '../engine/child-turns'
import type { ChildCall } from './turn-host'

export class ChildWaits implements ChildHost {
  /** The children told of and not handed over yet, by parent turn. */
  readonly #pending = new Map<string, ChildCall[]>()
  /** The parents whose `runUntilPause` waits for a child, by parent turn. */
  readonly #waiting = new Map<string, () => void>()

  waitsOn(parentTurnId: string, child: ChildCall): void {
    const pending = this.#pending.get(parentTurnId) ?? []
    if (!pending.some((known) => known.turnId === child.turnId)) pending.push(child)
    this.#pending.set(parentTurnId, pending)
    this.#waiting.get(parentTurnId)?.()
  }

  /**
   * Resolves with the children `parentTurnId` waits on, once it waits on one, handed over (each
   * once): the calls that start children in the same step are gathered first (one macrotask), so
   * the invocation calls them together. `stop` ends the wait (the turn paused otherwise).
   */
  next(parentTurnId: string): { children: Promise<ChildCall[]>; stop(): void } {
    let stop = () => {}
    const children = new Promise<ChildCall[]>((resolve) => {
      let stopped = false
      const handOver = () => {
        this.#waiting.delete(parentTurnId)
        setImmediate(() => {
          // Stopped meanwhile (the turn paused otherwise): the children stay for the next wait.
          if (stopped) return
          const pending = this.#pending.get(parentTurnId) ?? []
          this.#pending.delete(parentTurnId)
          resolve(pending)
        })
      }
      stop = () => {
        stopped = true
        if (this.#waiting.get(parentTurnId) === handOver) this.#waiting.delete(parentTurnId)
      }
      if (this.#pending.has(parentTurnId)) handOver()
      else this.#waiting.set(parentTurnId, handOver)
    })
    return { children, stop }
  }

  /** Forgets a parent that ended (children it told of and nobody called: they ended with it). */
  forget(parentTurnId: string): void {
    this.#pending.delete(parentTurnId)
    this.#waiting.delete(parentTurnId)
  }
}
