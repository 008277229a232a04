/**
 * An engine is taken for dead only when the database said so for a while: a living engine whose
 * liveness session is being opened again (a dropped connection, ~100 ms of backoff) lacks its
 * lock for a moment, and one sighting of that must not hand its turns to another engine (they
 * would go on, fenced, but a call in flight would be in doubt). Every read of the engines'
 * liveness, the 250 ms watch's and a recovery pass's, goes through one record of sightings.
 */
import type { EngineLiveness } from '../store/backend'

/** An owner seen gone in a run of reads, each within `maxGapMs` of the one before. */
interface Run {
  since: number
  last: number
}

export class GoneSightings {
  readonly #runs = new Map<string, Run>()

  /**
   * @param minRunMs how long an owner must be seen gone, read after read, before it is (two watch beats of 250 ms: 200)
   * @param maxGapMs reads further apart than this start a new run (a blip long ago and one now are two blips)
   */
  constructor(
    private readonly minRunMs = 200,
    private readonly maxGapMs = 1_000,
  ) {}

  /** Of the owners `asked`, those seen gone now (in `gone`) for `minRunMs` already; an owner seen alive is forgotten. */
  confirm(asked: Iterable<string>, gone: ReadonlySet<string>, now: number): Set<string> {
    for (const [owner, run] of this.#runs) if (now - run.last > this.maxGapMs) this.#runs.delete(owner)
    const confirmed = new Set<string>()
    for (const owner of asked) {
      if (!gone.has(owner)) {
        this.#runs.delete(owner)
        continue
      }
      const run = this.#runs.get(owner) ?? { since: now, last: now }
      run.last = now
      this.#runs.set(owner, run)
      if (now - run.since >= this.minRunMs) confirmed.add(owner)
    }
    return confirmed
  }
}

/** The engine's reads of the others' liveness, each an owner's death confirmed by `sightings` before it counts. */
export interface ConfirmedLiveness {
  /** Which of `owners` are alive, or not confirmed dead yet. */
  liveOwners(owners: readonly string[]): Promise<ReadonlySet<string>>
  /** The owners of turns whose leases hold, confirmed dead. */
  goneOwners(except: string): Promise<string[]>
}

/**
 * @example
 * const confirmed = confirmedLiveness(opened.liveness)
 * await confirmed.goneOwners(owner) // [] on the first sighting of a dead engine; it, 250 ms later
 */
export function confirmedLiveness(liveness: Pick<EngineLiveness, 'liveOwners' | 'goneOwners'>, sightings = new GoneSightings(), now: () => number = Date.now): ConfirmedLiveness {
  return {
    async liveOwners(owners) {
      const alive = await liveness.liveOwners(owners)
      const confirmed = sightings.confirm(owners, new Set(owners.filter((owner) => !alive.has(owner))), now())
      return new Set(owners.filter((owner) => !confirmed.has(owner)))
    },
    async goneOwners(except) {
      const gone = await liveness.goneOwners(except)
      return [...sightings.confirm(gone, new Set(gone), now())]
    },
  }
}
