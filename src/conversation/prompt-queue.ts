/**
 * Queued prompts (`prompt(..., { whenBusy: 'enqueue' })`): stored in the database, started in
 * order when their session is idle, by whichever engine sees it idle first: the one whose turn
 * just ended, the one that queued the prompt, or one that recovered a crashed turn (the
 * transaction that starts the turn takes the queue row, so each prompt runs once). The handle's
 * `done` follows the turn wherever it runs (another engine's: by reading its row every
 * `controlPollIntervalMs`, and at once when PostgreSQL notifies that the session's turn ended or
 * its queue moved).
 */
import type { SteerWrites } from './steer-writes'
import { errorFromRecord } from '../core/errors/restore'
import type { Bus } from '../core/bus'
import type { ResolvedConfig } from '../config/resolved-config'
import { EngineClosedError, QueuedPromptCancelledError, SessionNotFoundError } from '../core/errors'
import { newId } from '../core/ids'
import type { QueuedPromptRecord, Store } from '../store/store'
import type { Turn, TurnResult } from '../turn/turn-handle'
import type { PromptOptions, TurnRecord } from '../core/types'
import { finalTextOf } from '../turn/turn-result'
import { usageOfMessages } from '../core/usage'
import type { UserPartDraft } from './user-input'

/** A prompt waiting for its session to be idle, or a message steered into its running turn. */
export interface QueuedPrompt {
  /** The id its turn will have (`engine.getTurn`, `engine.activeTurn(sessionId)?.id` once it runs). */
  readonly id: string
  readonly sessionId: string
  /**
   * Resolves when the turn that delivered it has ended (whichever engine ran it: its own turn,
   * or for a steer the running turn that took it); rejects with `QueuedPromptCancelledError`
   * when cancelled first.
   */
  readonly done: Promise<TurnResult>
  /** Resolves once it is stored (durably: any engine on the database delivers it from then on); rejects when it could not be. */
  readonly stored: Promise<void>
  /** Removes it from the queue; false when its turn already started (or it is gone). */
  cancel(): Promise<boolean>
}

/** Pushed news that a session's rows changed (PostgreSQL notifications), when the engine listens. */
export interface SessionChangeFeed {
  /**
   * Calls `listener` with a session whose turn ended or whose queue moved (among other changes
   * of its rows), or with no session when news may have been missed (the listening connection
   * was down). Returns the unsubscribe.
   */
  subscribe(listener: (sessionId?: string) => void): () => void
}

export interface PromptQueueDeps {
  store: Store
  bus: Bus
  config: ResolvedConfig
  isClosed(): boolean
  activeTurn(sessionId: string): Turn | undefined
  /** Starts the queued prompt's turn in this engine (its start takes the queue row). */
  start(record: QueuedPromptRecord, memory: Pick<PromptOptions, 'headers' | 'stopWhen' | 'output'>): Turn
  /** Wakes the handles of the session's prompts another engine runs as soon as its turn ends (the poll is the fallback). */
  changes?: SessionChangeFeed
  /** Told of each steer while it is stored (a running turn waits for it before a model call). */
  steers: SteerWrites
}

interface Waiter {
  sessionId: string
  /**
   * Its row is committed. Until then the checks leave it alone: the waiter is registered before
   * its row is written, and a check that ran in between found neither a queue row nor a turn and
   * called the prompt cancelled (seen as a steer sent with no turn running rejecting with
   * QueuedPromptCancelledError while the poll of an earlier steer ran).
   */
  stored?: boolean
  /** A steer: the turn that was running when it was stored (it takes the steer unless it ends first). */
  target?: string
  resolve(result: TurnResult): void
  reject(error: unknown): void
}

/**
 * Stores a queued prompt or a steer in its session's queue, in one transaction that locks the
 * session first; a steer resolves with the id of the session's open turn then (the turn it is
 * for: it takes it at its next model call), if one is open. Every queued row is written here.
 *
 * @example
 * const open = await storeQueued(store, { id, sessionId, input, options: {}, time: { created: Date.now() }, kind: 'steer' })
 */
export function storeQueued(store: Pick<Store, 'transaction'>, record: QueuedPromptRecord): Promise<string | undefined> {
  return store.transaction(async (tx) => {
    // A write first (SQLite: a read-then-write transaction fails at once with SQLITE_BUSY when another connection wrote in between).
    if (!(await tx.sessions.lock(record.sessionId, record.time.created))) throw new SessionNotFoundError(record.sessionId)
    await tx.queue.insert(record)
    return record.kind === 'steer' ? (await tx.turns.openOfSession(record.sessionId))?.id : undefined
  })
}

export class PromptQueue {
  private readonly waiters = new Map<string, Waiter>()
  /** Options of prompts queued here that are never stored (headers, stop conditions), used when this engine starts them. */
  private readonly memory = new Map<string, Pick<PromptOptions, 'headers' | 'stopWhen' | 'output'>>()
  /** Queued prompts running in this engine (their handle settles from their `done`). */
  private readonly runningHere = new Set<string>()
  private readonly draining = new Set<string>()
  private poll: NodeJS.Timeout | undefined
  /** The check running now, and whether another was asked for while it ran (it may have read too early). */
  private checking: Promise<void> | undefined
  private checkAgain = false
  private readonly unsubscribe: (() => void) | undefined

  constructor(private readonly deps: PromptQueueDeps) {
    this.unsubscribe = deps.changes?.subscribe((sessionId) => {
      if (sessionId === undefined || [...this.waiters.values()].some((w) => w.sessionId === sessionId)) void this.check()
    })
  }

  /**
   * Stores the prompt and starts it at once if its session is idle. A `steer` is taken by the
   * session's running turn at its next model call instead (a steer no running turn takes
   * starts a turn as a prompt does).
   *
   * @example
   * const queued = queue.enqueue(sessionId, parts, { model: 'fast' })
   */
  enqueue(sessionId: string, input: UserPartDraft[], options: PromptOptions, kind: 'prompt' | 'steer' = 'prompt'): QueuedPrompt {
    const id = newId('trn')
    const { headers, stopWhen, output, ...stored } = options
    if (headers || stopWhen || output) this.memory.set(id, { ...(headers ? { headers } : {}), ...(stopWhen ? { stopWhen } : {}), ...(output ? { output } : {}) })
    let resolve!: (result: TurnResult) => void
    let reject!: (error: unknown) => void
    const done = new Promise<TurnResult>((res, rej) => {
      resolve = res
      reject = rej
    })
    done.catch(() => undefined) // a caller that never awaits `done` gets no unhandled rejection
    const waiter: Waiter = { sessionId, resolve, reject }
    this.waiters.set(id, waiter)
    const saved = storeQueued(this.deps.store, { id, sessionId, input, options: stored, time: { created: Date.now() }, ...(kind === 'steer' ? { kind } : {}) }).then((open) => {
      if (open) waiter.target = open
    })
    saved.then(
      () => {
        waiter.stored = true
        this.deps.bus.publish({ type: 'prompt.queued', sessionId, id, kind })
        this.ensurePolling()
        return this.next(sessionId)
      },
      (error) => this.settle(id, error),
    )
    saved.catch(() => undefined) // told through `done` (and `stored`, to a caller that awaits it)
    if (kind === 'steer') this.deps.steers.storing(sessionId, saved)
    return { id, sessionId, done, stored: saved, cancel: () => this.cancel(id) }
  }

  /** The session's queued prompts, oldest first. */
  list(sessionId: string): Promise<QueuedPromptRecord[]> {
    return this.deps.store.queue.list(sessionId)
  }

  /** Cancels a queued prompt; false when its turn already started (or there is no such prompt). */
  async cancel(id: string): Promise<boolean> {
    const record = await this.deps.store.queue.get(id)
    if (!record || !(await this.deps.store.queue.take(id))) return false
    this.settle(id, new QueuedPromptCancelledError(record.sessionId, id))
    return true
  }

  /**
   * What may start now after `sessionId`'s queue or turn moved: its own next prompt, or, with
   * `concurrency` limits (a slot may have freed for any session), the queues that wait, fairly.
   */
  next(sessionId: string): Promise<void> {
    return this.deps.config.concurrency ? this.drainFairly() : this.drain(sessionId).then(() => undefined)
  }

  /**
   * With `concurrency` limits: starts queued prompts of idle sessions while slots are free, one
   * tenant after another (round robin from the tenant after the one served last, not first come:
   * a tenant with many queued prompts does not hold back one with a single prompt). The tenant
   * served last is the store's, which every engine's start writes, so the turns alternate
   * whichever engine dequeues them. The counts are read without the lock; each start checks
   * again under it (a start another engine's beat stays queued, for the next pass).
   */
  async drainFairly(): Promise<void> {
    const { store, config } = this.deps
    const limits = config.concurrency
    if (!limits || !store.slots || this.deps.isClosed()) return
    try {
      const idle = await store.queue.idleSessions()
      if (idle.length === 0) return
      const running = await store.slots.byTenant()
      let total = [...running.values()].reduce((a, b) => a + b, 0)
      const byTenant = new Map<string, string[]>()
      for (const sessionId of idle) {
        const session = await store.sessions.get(sessionId)
        if (!session || session.parentSessionId) continue
        const tenant = session.tenant ?? ''
        byTenant.set(tenant, [...(byTenant.get(tenant) ?? []), sessionId])
      }
      for (const [tenant, sessionId] of roundRobin(byTenant, await store.slots.servedLast())) {
        if (limits.total !== undefined && total >= limits.total) break
        if (limits.perTenant !== undefined && tenant !== '' && (running.get(tenant) ?? 0) >= limits.perTenant) continue
        // A turn of that session here (another pass's start, its transaction still in flight)
        // takes the slot, or is refused and the next pass tries again: not a reason to start the
        // next tenant's now, whose start could take the lock first.
        const startingHere = this.draining.has(sessionId) || this.deps.activeTurn(sessionId) !== undefined
        if (!startingHere && !(await this.drain(sessionId))) continue
        total += 1
        running.set(tenant, (running.get(tenant) ?? 0) + 1)
      }
    } catch {
      // a read failed (database closing): the next turn's end or poll tries again
    }
  }

  /**
   * Starts the session's oldest queued prompt if the session is idle (no turn here or in
   * another engine). Called when a turn ends, after a prompt is queued, and by the sweep.
   * Resolves true when it started one (its turn's start may still be refused: over a
   * `concurrency` limit the prompt stays queued).
   */
  async drain(sessionId: string): Promise<boolean> {
    const { store } = this.deps
    if (this.deps.isClosed() || this.deps.activeTurn(sessionId) || this.draining.has(sessionId)) return false
    this.draining.add(sessionId)
    try {
      // The queue first: after most turns it is empty, and one read says so.
      const record = await store.queue.oldest(sessionId)
      if (!record) return false
      if (await store.turns.openOfSession(sessionId)) return false // its engine drains when it ends
      if (this.deps.isClosed() || this.deps.activeTurn(sessionId)) return false
      let turn: Turn
      try {
        turn = this.deps.start(record, this.memory.get(record.id) ?? {})
      } catch (error) {
        // It cannot start here (e.g. its model is not registered on this engine): drop it, saying why.
        if (await store.queue.take(record.id)) this.settle(record.id, error)
        return false
      }
      this.runningHere.add(record.id)
      turn.done.then(
        (result) => this.settle(record.id, null, result),
        // not started: another engine took it, the session is busy, or a concurrency limit is reached (it stays queued)
        () => this.runningHere.delete(record.id),
      )
      return true
    } catch {
      // a read failed (database closing): the next drain or sweep tries again
      return false
    } finally {
      this.draining.delete(sessionId)
    }
  }

  /** Rejects the handles still waiting (the engine closes; the prompts stay queued for other engines). */
  close(): void {
    clearInterval(this.poll)
    this.unsubscribe?.()
    for (const [id, waiter] of this.waiters) {
      if (!this.runningHere.has(id)) waiter.reject(new EngineClosedError(`follow queued prompt ${id} (it stays queued for the engines on this database)`))
    }
    this.waiters.clear()
  }

  private settle(id: string, error: unknown, result?: TurnResult): void {
    const waiter = this.waiters.get(id)
    this.waiters.delete(id)
    this.memory.delete(id)
    this.runningHere.delete(id)
    if (!waiter) return
    if (result) waiter.resolve(result)
    else waiter.reject(error)
  }

  private ensurePolling(): void {
    if (this.poll) return
    // How often a queued prompt's handle looks for its turn's end when another engine runs it.
    this.poll = setInterval(() => void this.check(), this.deps.config.controlPollIntervalMs)
    this.poll.unref()
  }

  /** Runs a check now, or once more after the one running (which may have read before the change it is asked for). */
  private check(): Promise<void> {
    if (this.checking) {
      this.checkAgain = true
      return this.checking
    }
    this.checking = (async () => {
      try {
        do {
          this.checkAgain = false
          await this.checkWaiters()
        } while (this.checkAgain)
      } finally {
        this.checking = undefined
      }
    })()
    return this.checking
  }

  /** Handles of prompts another engine runs (or cancelled there): settled from the rows. */
  private async checkWaiters(): Promise<void> {
    if (this.waiters.size === 0) {
      clearInterval(this.poll)
      this.poll = undefined
      return
    }
    const { store } = this.deps
    for (const [id, waiter] of [...this.waiters]) {
      if (this.runningHere.has(id) || !waiter.stored || this.deps.isClosed()) continue
      try {
        const turn = await store.turns.get(id)
        if (turn?.outcome) {
          this.settle(id, null, await this.resultOf(turn))
        } else if (!turn && !(await store.queue.get(id))) {
          // Another engine dequeues in one transaction (queue row deleted, turn row inserted); our
          // two reads are two statements, so that commit can fall between them: read the turn again
          // before calling the prompt cancelled (the next check settles it when it ran).
          if (await store.turns.get(id)) continue
          if (waiter.target) await this.followTarget(id, waiter.target)
          else this.settle(id, new QueuedPromptCancelledError(waiter.sessionId, id))
        } else if (!turn) {
          await this.next(waiter.sessionId)
        }
      } catch {
        // the database is closing: the engine's close settles the handles
      }
    }
  }

  /** A steer taken by the turn it was sent to: its handle settles with that turn's end. */
  private async followTarget(id: string, target: string): Promise<void> {
    const turn = await this.deps.store.turns.get(target)
    if (!turn?.outcome) return // still running: the next check looks again
    this.settle(id, null, await this.resultOf(turn))
  }

  /** An ended turn's result, from its row and its messages (it ran on another engine). */
  private async resultOf(turn: TurnRecord): Promise<TurnResult> {
    const messages = (await this.deps.store.messages.list(turn.sessionId)).filter((m) => m.info.turnId === turn.id)
    return {
      turnId: turn.id,
      sessionId: turn.sessionId,
      outcome: turn.outcome!,
      ...(turn.error ? { error: errorFromRecord(turn.error) } : {}),
      usage: usageOfMessages(turn.id, messages.map((m) => m.info)),
      text: finalTextOf(messages),
    }
  }
}

/**
 * The sessions of each tenant in round-robin order: the first of each tenant (tenants in name
 * order, starting after `last`), then the second of each, and so on.
 *
 * @example
 * [...roundRobin(new Map([['a', ['s1', 's2']], ['b', ['s3']]]), 'a')] // [['b','s3'], ['a','s1'], ['a','s2']]
 */
export function* roundRobin(byTenant: Map<string, string[]>, last: string | undefined): Generator<[string, string]> {
  const names = [...byTenant.keys()].sort()
  const start = last === undefined ? 0 : names.findIndex((name) => name > last)
  const order = start <= 0 ? names : [...names.slice(start), ...names.slice(0, start)]
  const most = Math.max(0, ...order.map((name) => byTenant.get(name)!.length))
  for (let i = 0; i < most; i++) for (const name of order) if (i < byTenant.get(name)!.length) yield [name, byTenant.get(name)![i]]
}
