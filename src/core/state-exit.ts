/**
 * How the work of a chart state learns that the chart left the state (an abort, a stop): the
 * gated actor's `leave` is told once, and the work reads `left`, listens with `onLeave`, or hands
 * `signal` to an API that takes an AbortSignal.
 *
 * Why not an AbortSignal for every state: Node (20) makes each AbortSignal transferable when it
 * is made, about 2 KB and 10 µs, and a step enters two states; their work makes the signals
 * an API takes anyway (the model request's, under its idle timer; each tool call's, under its
 * timeout), which follow this one through `onLeave`. `signal` is made on first read, for work
 * that has no signal of its own.
 */
export class StateExit {
  #left = false
  #reason: unknown
  #listeners: Array<(reason: unknown) => void> | undefined
  #controller: AbortController | undefined

  /** True once the chart has left the state. */
  get left(): boolean {
    return this.#left
  }

  /** Why it left (`MessageAbortedError`); undefined until it has. */
  get reason(): unknown {
    return this.#reason
  }

  /** An AbortSignal aborted with `reason` when the chart leaves the state (made on first read). */
  get signal(): AbortSignal {
    if (!this.#controller) {
      this.#controller = new AbortController()
      if (this.#left) this.#controller.abort(this.#reason)
    }
    return this.#controller.signal
  }

  /** Calls `listener` once when the chart leaves the state (at once when it has); returns its removal. */
  onLeave(listener: (reason: unknown) => void): () => void {
    if (this.#left) {
      listener(this.#reason)
      return () => undefined
    }
    const listeners = (this.#listeners ??= [])
    listeners.push(listener)
    return () => {
      const at = listeners.indexOf(listener)
      if (at >= 0) listeners.splice(at, 1)
    }
  }

  /** The chart left the state (the gated actor's stop): told once, to the listeners in their order. */
  leave(reason: unknown): void {
    if (this.#left) return
    this.#left = true
    this.#reason = reason
    this.#controller?.abort(reason)
    const listeners = this.#listeners
    this.#listeners = undefined
    for (const listener of listeners ?? []) listener(reason)
  }
}
