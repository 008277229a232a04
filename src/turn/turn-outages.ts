/**
 * How one turn rides out a database outage: the policy its writes follow (the part writer's,
 * the prompt's), the clock of its own reads and transactions outside the part writer (steers,
 * a run tree's spending), and the waits it went through until a transition row records them.
 * Each wait is told to the engine's watch and published as the turn's `storage.waiting` and
 * `storage.resumed`.
 */
import type { TurnchartEvent } from '../core/bus'
import { StorageError, type SerializedError } from '../core/errors'
import { OutageRetry, type OutagePolicy, type OutageWatch } from '../store/outage'
import { StorageWaitLog } from './turn-log/storage-wait-log'

/** Who the waits are told to: the turn's ids, its events, and its redactor once the turn is configured. */
export interface OutageTurn {
  turnId: string
  sessionId: string
  publish(event: TurnchartEvent): void
  redact(error: SerializedError): SerializedError
}

export class TurnOutages {
  readonly policy: OutagePolicy
  /** The outages the turn waited out, until a transition row records them. */
  readonly waits = new StorageWaitLog()
  #retry: OutageRetry | undefined

  constructor(turn: OutageTurn, engine: OutagePolicy | undefined) {
    this.policy = { outageMs: engine?.outageMs ?? 0, watch: this.#watch(turn, engine?.watch) }
  }

  /**
   * Runs a read or a transaction of the turn outside its part writer through a database outage:
   * run again while it fails for a reason that passes, up to `storage.outageMs`.
   */
  through<T>(operation: string, run: () => Promise<T>): Promise<T> {
    this.#retry ??= new OutageRetry(this.policy)
    return this.#retry.run(operation, run)
  }

  /** The engine's watch of outages, and the turn's events that say its write waits and goes on. */
  #watch(turn: OutageTurn, engine: OutageWatch | undefined): OutageWatch {
    const ids = { sessionId: turn.sessionId, turnId: turn.turnId }
    return {
      waiting: (operation, cause) => {
        engine?.waiting(operation, cause)
        const since = Date.now()
        this.waits.waiting(operation, since)
        turn.publish({ type: 'storage.waiting', ...ids, operation, since, error: turn.redact(new StorageError(operation, cause).toJSON()) })
      },
      resumed: (operation, outcome) => {
        engine?.resumed(operation, outcome)
        this.waits.resumed(operation, outcome)
        turn.publish({ type: 'storage.resumed', ...ids, operation, ...outcome })
      },
    }
  }
}
