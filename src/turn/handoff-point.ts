/**
 * Where a turn is handed to another engine (`close({ handoff: true })`): its next step gate.
 * Between two model calls nothing is in flight (no request streaming, no tool running), so a
 * turn stopped there is resumed by the next engine with nothing paid twice. The engine asks
 * (`request`); the step gate, entered next, holds instead of deciding (`hold`) and says so
 * (`reached`); the handle then writes the gate's row and detaches the turn.
 */
import { deferred } from '../core/deferred'

export class HandoffPoint {
  #requested = false
  readonly #reached = deferred<void>()

  /** True once the engine asked for the handoff: the next step gate holds. */
  get requested(): boolean {
    return this.#requested
  }

  /** Settles when the turn holds at a step gate. */
  get reached(): Promise<void> {
    return this.#reached.promise
  }

  request(): void {
    this.#requested = true
  }

  /** The step gate's work when a handoff is asked: say it is reached, and never decide (the turn is detached here). */
  hold(): Promise<never> {
    this.#reached.resolve()
    return new Promise<never>(() => undefined)
  }
}
