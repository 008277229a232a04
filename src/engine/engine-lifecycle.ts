/**
 * The engine's lifecycle, in one module: whether it is open, the background work that runs while
 * it is (the recovery sweep at its interval, the timer for the nearest stored deadline, the
 * released turns taken at once, lease renewal, parking, the control poller), the readers that
 * follow turns it handed off, and close, whichever way (hand off, park and detach, abort).
 *
 *   made (open, nothing in the background) ─start(parts)─► running ─close()─► closed ─► store closed
 *                                                                   (the readers of handed-off turns, then the database)
 *
 * `createEngine` makes it first (the parts built after it ask `isClosed`), then starts it with
 * the parts it runs; nothing else stops them.
 */
import { deferred } from '../core/deferred'
import { InvalidOptionError } from '../core/errors'
import type { ResolvedConfig } from '../config/resolved-config'
import type { PromptQueue } from '../conversation/prompt-queue'
import type { Store } from '../store/store'
import type { RunningTurn } from '../turn/turn-handle'
import { deadlineTimer, nextWaitDeadline, type DeadlineTimer } from './deadline-sweep'
import type { CloseOptions, HandedOffReader } from './engine'
import type { ParkedTurns } from './parked-turns'
import { keepLeases, type LetStalledGo, type RunningTurns } from './running-turns'
import type { StoreFeeds } from './store-feeds'
import type { Bus } from '../core/bus'

/** What the lifecycle runs and stops: the engine's parts, built by `createEngine`. */
export interface LifecycleParts {
  config: Pick<ResolvedConfig, 'leaseMs' | 'recovery'>
  store: Store
  bus: Pick<Bus, 'subscribe'>
  owner: string
  /** False: the turns run without leases (their host serializes and retries them): none is renewed. */
  leases: boolean
  running: RunningTurns
  queue: Pick<PromptQueue, 'close'>
  parked: Pick<ParkedTurns, 'parkAll' | 'close'>
  poller: { stop(): void }
  feeds?: Pick<StoreFeeds, 'released'>
  /** Takes over the turns left by engines that are gone and settles the due deadlines (`engine.recover`). */
  recover(): Promise<unknown>
  /** Takes over the turns another engine released (by id). */
  takeOver(ids: string[]): Promise<unknown>
  /** The owners, other than this engine, of turns whose liveness the database ended (PostgreSQL): a sweep takes them at once. */
  goneOwners?(except: string): Promise<string[]>
  /** Lets go of a turn stopped here as stalled, for recovery to resume it. */
  letStalledGo: LetStalledGo
  /** Closes what the engine opened: its database (and listening connection), its MCP servers. */
  closeResources(): Promise<void>
}

export class EngineLifecycle {
  #closed = false
  #storeClosed = false
  #parts: LifecycleParts | undefined
  #stopBackground: () => void = () => undefined
  /** The readers following handed-off turns: the database stays open until the last lets go. */
  #followers = 0
  #unfollowed = deferred<void>()

  /** True once `close` was called: no new work is taken. */
  isClosed = (): boolean => this.#closed

  /** True once the database is closed: the last reads are refused. */
  isStoreClosed = (): boolean => this.#storeClosed

  /** Starts the background work with the engine's parts; resolves once the recovery at open ran (when asked). */
  async start(parts: LifecycleParts): Promise<void> {
    this.#parts = parts
    const background = startBackground(parts, this.isClosed)
    this.#stopBackground = background.stop
    if (parts.config.recovery.onOpen) {
      await parts.recover().catch(async (error: unknown) => {
        this.#stopBackground()
        await parts.closeResources()
        throw error
      })
    }
    // The parked turns' deadlines too: one timer for the earliest (a parked turn holds none).
    await armForStored(parts.store, background.timer).catch(() => undefined)
  }

  /**
   * A reader of the rows of turns this engine handed off (a browser stream following one to its
   * new owner); the database stays open for it until it is released. Undefined once closed.
   */
  follow(reads: Omit<HandedOffReader, 'release'>): HandedOffReader | undefined {
    if (this.#storeClosed) return undefined
    if (this.#followers++ === 0) this.#unfollowed = deferred<void>()
    let released = false
    return {
      ...reads,
      release: () => {
        if (released) return
        released = true
        if (--this.#followers === 0) this.#unfollowed.resolve()
      },
    }
  }

  /** `engine.close(options)`: see `Engine.close`. */
  async close(options: CloseOptions = {}): Promise<void> {
    const handoffMs = checkCloseOptions(options)
    const parts = this.#parts
    if (this.#closed || !parts) return
    this.#closed = true
    if (handoffMs !== null) await this.#handOff(parts, handoffMs)
    else {
      // A turn waiting on a person or the world is parked (held by no engine, taken by whichever
      // settles it), unless every turn is aborted; the others stop where they are and are released.
      if (options.abortTurns !== true) await parts.parked.parkAll()
      this.#stopBackground()
      parts.queue.close()
      await endTurnsAtClose(parts.running.all(), options.abortTurns === true)
    }
    await parts.store.turns.release(parts.owner).catch(() => undefined)
    this.#storeClosed = true
    await parts.closeResources()
  }

  /**
   * No new work (prompts refused, no recovery, the queue stopped); leases and control go on while
   * the turns reach their gates, each released (and, on PostgreSQL, announced) as it does.
   */
  async #handOff(parts: LifecycleParts, handoffMs: number): Promise<void> {
    parts.queue.close()
    await Promise.all(
      parts.running.all().map(async (turn) => {
        await turn.handoff(handoffMs)
        await parts.store.turns.release(parts.owner, [turn.id]).catch(() => undefined)
      }),
    )
    this.#stopBackground()
    // Streams of the handed-off turns follow them through the new owners' rows: until they end.
    if (this.#followers > 0) await this.#unfollowed.promise
  }
}

/** The work that runs while the engine is open; returns what stops all of it. */
function startBackground(parts: LifecycleParts, isClosed: () => boolean): { stop(): void; timer: DeadlineTimer } {
  const { config, store, bus, running, owner } = parts
  // At a waiting turn's deadline: the sweep (src/engine/deadline-sweep.ts); after each sweep, the
  // timer is armed for the earliest stored deadline of the waiting turns (parked ones included).
  const timer = deadlineTimer((listener) => bus.subscribe(listener), () => whileOpen())
  // One sweep at a time: a sweep slowed by the database (an outage) is not joined by the next
  // ones; one asked for meanwhile (a deadline, the interval) runs once it is done.
  let sweeping: 'no' | 'yes' | 'again' = 'no'
  const whileOpen = (): void => {
    if (isClosed()) return
    if (sweeping !== 'no') return void (sweeping = 'again')
    sweeping = 'yes'
    parts
      .recover()
      .then(() => armForStored(store, timer))
      .catch(() => undefined)
      .finally(() => {
        const again = sweeping === 'again'
        sweeping = 'no'
        if (again) whileOpen()
      })
  }
  // A turn another engine released (its handoff, its close): recovered at once, not at the next sweep.
  // (an engine that takes over no turns while it runs, `recovery.intervalMs: 0`, takes none of these either)
  const stopTakingReleased =
    parts.feeds && config.recovery.intervalMs > 0
      ? takeReleasedTurns(parts.feeds.released, (ids) => (isClosed() ? Promise.resolve() : parts.takeOver(ids)))
      : () => undefined
  // A turn's work may outlive its bound by a lease before it is stalled: a write may wait that long on another
  // engine's transaction (PostgreSQL ends one left idle past a lease). (SQLite's busy wait blocks the process
  // itself: no renewal runs meanwhile, and the write has failed or gone through when the next one does.)
  const stopRenewal = parts.leases ? keepLeases(store.turns, running, owner, { leaseMs: config.leaseMs, stallMarginMs: config.leaseMs }, parts.letStalledGo) : () => undefined
  const stopSweeps = config.recovery.intervalMs > 0 ? sweepEvery(config.recovery.intervalMs, parts, whileOpen) : () => undefined
  let stopped = false
  const stop = () => {
    if (stopped) return
    stopped = true
    stopTakingReleased()
    parts.parked.close()
    stopRenewal()
    timer.stop()
    stopSweeps()
    parts.poller.stop()
  }
  return { stop, timer }
}

/**
 * Takes over the turns of workers that die while this engine runs, then settles the waits past
 * their deadline: `sweep` every `intervalMs`, and as soon as the database says an engine died.
 */
function sweepEvery(intervalMs: number, parts: Pick<LifecycleParts, 'goneOwners' | 'owner'>, sweep: () => void): () => void {
  const timer = setInterval(sweep, intervalMs)
  timer.unref()
  const stopWatch = watchForGoneEngines(parts, sweep)
  return () => {
    clearInterval(timer)
    stopWatch()
  }
}

/** How often an engine asks the database whether an engine holding turns died (one read of the turns and the server's locks). */
const livenessBeatMs = 250

/**
 * An engine whose liveness the database ended (it died, on any host) is noticed within two beats,
 * not a lease: `sweep` runs then (`goneOwners` answers an owner once it was seen gone for two
 * beats: a living engine whose liveness session is being opened again is not taken for dead).
 */
function watchForGoneEngines(parts: Pick<LifecycleParts, 'goneOwners' | 'owner'>, sweep: () => void): () => void {
  const { goneOwners, owner } = parts
  if (!goneOwners) return () => undefined
  const beat = async () => {
    if ((await goneOwners(owner)).length > 0) sweep()
  }
  const watch = setInterval(() => void beat().catch(() => undefined), livenessBeatMs)
  watch.unref()
  return () => clearInterval(watch)
}

/** Arms the engine's deadline timer for the earliest stored deadline of the waiting turns. */
async function armForStored(store: Store, timer: DeadlineTimer): Promise<void> {
  const next = await nextWaitDeadline(store, Date.now())
  if (next !== undefined) timer.arm(next)
}

/** The default of `close({ handoffTimeoutMs })`: under the 30 s a container is usually given to stop. */
const defaultHandoffTimeoutMs = 20_000

/** `close`'s options checked: the handoff's bound (ms), or null when the turns are not handed off. */
function checkCloseOptions(options: CloseOptions): number | null {
  if (typeof options !== 'object' || options === null) throw new InvalidOptionError('close options', options, 'an object like { handoff: true } or { abortTurns: true }')
  if (options.handoff && options.abortTurns) {
    throw new InvalidOptionError('handoff', options.handoff, 'handoff or abortTurns, not both (a handed-off turn goes on in another engine; an aborted one ends here)')
  }
  const timeout = options.handoffTimeoutMs
  if (timeout !== undefined && (typeof timeout !== 'number' || !Number.isFinite(timeout) || timeout < 0)) {
    throw new InvalidOptionError('handoffTimeoutMs', timeout, 'a number of milliseconds, 0 or more')
  }
  return options.handoff ? (timeout ?? defaultHandoffTimeoutMs) : null
}

/**
 * Takes over each turn another engine releases, as soon as it is told: the releases heard in
 * one read of the listening connection (a handoff releases many turns at once) go together,
 * at once, without waiting for a takeover still running (that one waits on its own turns'
 * writes); a turn being taken is not taken twice. Missed notifications (a reconnect) are left
 * to the recovery sweep. Returns the stop.
 */
function takeReleasedTurns(feed: { subscribe(listener: (turnId?: string) => void): () => void }, takeOver: (ids: string[]) => Promise<unknown>): () => void {
  const heard = new Set<string>()
  const taking = new Set<string>()
  let scheduled = false
  const take = () => {
    scheduled = false
    const ids = [...heard].filter((id) => !taking.has(id))
    heard.clear()
    if (ids.length === 0) return
    for (const id of ids) taking.add(id)
    void takeOver(ids)
      .catch(() => undefined)
      .finally(() => {
        for (const id of ids) taking.delete(id)
      })
  }
  return feed.subscribe((turnId) => {
    if (!turnId) return
    heard.add(turnId)
    if (scheduled) return
    scheduled = true
    // After the other notifications of this read: one takeover for all of them.
    setImmediate(take)
  })
}

/**
 * The engine's turns at close: aborted (`abortTurns`), or detached, each staying in the state its
 * last committed row names (a waiting state included) for the next engine to resume.
 */
async function endTurnsAtClose(turns: RunningTurn[], abort: boolean): Promise<void> {
  if (abort) {
    for (const turn of turns) turn.abort('engine closed')
    await Promise.all(turns.map((turn) => turn.done.catch(() => undefined)))
  } else {
    await Promise.all(turns.map((turn) => turn.detach()))
  }
}
