/**
 * Every event an engine publishes, kept in order, and a way to await one (past or future)
 * instead of sleeping. Shared by the test harness and the model-based rig.
 */
import type { Engine, TurnchartEvent } from '../../src'

export interface EventLog {
  events: TurnchartEvent[]
  /** Resolves with the first event (already seen or still to come) matching `predicate`. */
  waitFor(predicate: (event: TurnchartEvent) => boolean, timeoutMs?: number): Promise<TurnchartEvent>
}

export function recordEvents(engine: Engine): EventLog {
  const events: TurnchartEvent[] = []
  const waiters: Array<{ predicate: (e: TurnchartEvent) => boolean; resolve: (e: TurnchartEvent) => void }> = []
  engine.subscribe((event) => {
    events.push(event)
    for (const waiter of [...waiters]) {
      if (waiter.predicate(event)) {
        waiters.splice(waiters.indexOf(waiter), 1)
        waiter.resolve(event)
      }
    }
  })
  const waitFor = (predicate: (event: TurnchartEvent) => boolean, timeoutMs = 10_000) => {
    const seen = events.find(predicate)
    if (seen) return Promise.resolve(seen)
    return new Promise<TurnchartEvent>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no matching event within ${timeoutMs} ms; saw ${events.map((e) => e.type).join(', ')}`)), timeoutMs)
      waiters.push({ predicate, resolve: (e) => { clearTimeout(timer); resolve(e) } })
    })
  }
  return { events, waitFor }
}
