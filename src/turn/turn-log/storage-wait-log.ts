/**
 * The database outages a turn waited out, until a transition row records them. The database is
 * what failed, so a wait cannot be written while it lasts: it rides on the next row that is
 * written (`TransitionRecord.storageWaits`), the row whose own write waited included, so that
 * `turnchart show` and the viewer, which read only the database, can say afterwards where the
 * turn stood still and why. Live, the events and the status say it (turn-outages.ts).
 */
import type { StorageWaited } from '../../core/types'

interface Ongoing {
  operation: string
  since: number
  /** Written already, measured to the attempt that went through: not recorded again when it ends. */
  written: boolean
}

/** What a row about to be written carries, and how to say it was written. */
export interface WaitsToWrite {
  waits: StorageWaited[]
  /** The row went through: these waits are recorded (a rolled-back row leaves them for the next). */
  written(): void
}

export class StorageWaitLog {
  #ended: StorageWaited[] = []
  #ongoing: Ongoing[] = []

  waiting(operation: string, since: number): void {
    this.#ongoing.push({ operation, since, written: false })
  }

  /** A wait ended; one that gave up is the turn's failure, told by its error, not recorded here. */
  resumed(operation: string, outcome: { waitedMs: number; gaveUp: boolean }): void {
    const index = this.#ongoing.findIndex((wait) => wait.operation === operation)
    if (index < 0) return
    const [wait] = this.#ongoing.splice(index, 1)
    if (!outcome.gaveUp && !wait!.written) this.#ended.push({ operation, waitedMs: outcome.waitedMs })
  }

  /** The waits a row written at `now` carries: those that ended, and those still waiting (the row's own), measured to `now`. */
  toWrite(now: number): WaitsToWrite {
    // (most rows carry none: every transition asks)
    if (this.#ended.length === 0 && this.#ongoing.length === 0) return noWaits
    const ended = this.#ended.length
    const ongoing = [...this.#ongoing]
    const waits = [...this.#ended, ...ongoing.map((wait) => ({ operation: wait.operation, waitedMs: now - wait.since }))]
    return {
      waits,
      written: () => {
        this.#ended.splice(0, ended)
        for (const wait of ongoing) wait.written = true
      },
    }
  }
}

/** What a row carries when nothing was waited out (shared: its list is empty and stays so). */
const noWaits: WaitsToWrite = { waits: [], written: () => undefined }
