/**
 * Queued prompts (`prompt(..., { whenBusy: 'enqueue' })`): stored in the database, started in
 * order when their session is idle, by whichever engine sees it idle first: the one whose turn
 * just ended, the one that queued the prompt, or one that recovered a crashed turn (the
 * transaction that starts the turn takes the queue row, so each prompt runs once). The handle's
 * `done` follows the turn wherever it runs (another engine's: by reading its row).
 */
import { errorFromRecord } from '../core/errors/restore'
import type { Bus } from '../core/bus'
import type { ResolvedConfig } from '../config/resolved-config'
import { EngineClosedError, QueuedPromptCancelledError, SessionNotFoundError } from '../core/errors'
import { newId } from '../core/ids'
import type { QueuedPromptRecord, Store } from '../store/store'
import type { Turn, TurnResult } from '../turn/turn-handle'
import type { PromptOptions } from '../core/types'
import { finalTextOf } from '../turn/turn-result'
import { usageOfMessages } from '../core/usage'
import type { UserPartDraft } from './user-input'

/** A prompt waiting for its session to be idle. */
export interface QueuedPrompt {
  /** The id its turn will have (`engine.getTurn`, `engine.activeTurn(sessionId)?.id` once it runs). */
  readonly id: string
  readonly sessionId: string
  /** Resolves when its turn has ended (whichever engine ran it); rejects with `QueuedPromptCancelledError` when cancelled first. */
  readonly done: Promise<TurnResult>
  /** Removes it from the queue; false when its turn already started (or it is gone). */
  cancel(): Promise<boolean>
}

export interface PromptQueueDeps {
  store: Store
  bus: Bus
  config: ResolvedConfig
  isClosed(): boolean
  activeTurn(sessionId: string): Turn | undefined
  /** Starts the queued prompt's turn in this engine (its start takes the queue row). */
  start(record: QueuedPromptRecord, memory: Pick<PromptOptions, 'headers' | 'stopWhen'>): Turn
}

interface Waiter {
  sessionId: string
  resolve(result: TurnResult): void
  reject(error: unknown): void
}

/** How often a queued prompt's handle looks for its turn's end when another engine runs it. */
const pollMs = 200

export class PromptQueue {
  private readonly waiters = new Map<string, Waiter>()
  /** Options of prompts queued here that are never stored (headers, stop conditions), used when this engine starts them. */
  private readonly memory = new Map<string, Pick<PromptOptions, 'headers' | 'stopWhen'>>()
  /** Queued prompts running in this engine (their handle settles from their `done`). */
  private readonly runningHere = new Set<string>()
  private readonly draining = new Set<string>()
  private poll: NodeJS.Timeout | undefined

  constructor(private readonly deps: PromptQueueDeps) {}

  /**
   * Stores the prompt and starts it at once if its session is idle.
   *
   * @example
   * const queued = queue.enqueue(sessionId, parts, { model: 'fast' })
   */
  enqueue(sessionId: string, input: UserPartDraft[], options: PromptOptions): QueuedPrompt {
    const id = newId('trn')
    const { headers, stopWhen, ...stored } = options
    if (headers || stopWhen) this.memory.set(id, { ...(headers ? { headers } : {}), ...(stopWhen ? { stopWhen } : {}) })
    let resolve!: (result: TurnResult) => void
    let reject!: (error: unknown) => void
    const done = new Promise<TurnResult>((res, rej) => {
      resolve = res
      reject = rej
    })
    done.catch(() => undefined) // a caller that never awaits `done` gets no unhandled rejection
    this.waiters.set(id, { sessionId, resolve, reject })
    const now = Date.now()
    this.deps.store
      .transaction(async (tx) => {
        // A write first (SQLite: a read-then-write transaction fails at once with SQLITE_BUSY when another connection wrote in between).
        if (!(await tx.sessions.lock(sessionId, now))) throw new SessionNotFoundError(sessionId)
        await tx.queue.insert({ id, sessionId, input, options: stored, time: { created: now } })
      })
      .then(
        () => {
          this.deps.bus.publish({ type: 'prompt.queued', sessionId, id })
          this.ensurePolling()
          return this.drain(sessionId)
        },
        (error) => this.settle(id, error),
      )
    return { id, sessionId, done, cancel: () => this.cancel(id) }
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
   * Starts the session's oldest queued prompt if the session is idle (no turn here or in
   * another engine). Called when a turn ends, after a prompt is queued, and by the sweep.
   */
  async drain(sessionId: string): Promise<void> {
    const { store } = this.deps
    if (this.deps.isClosed() || this.deps.activeTurn(sessionId) || this.draining.has(sessionId)) return
    this.draining.add(sessionId)
    try {
      if (await store.turns.openOfSession(sessionId)) return // its engine drains when it ends
      const record = await store.queue.oldest(sessionId)
      if (!record || this.deps.isClosed() || this.deps.activeTurn(sessionId)) return
      let turn: Turn
      try {
        turn = this.deps.start(record, this.memory.get(record.id) ?? {})
      } catch (error) {
        // It cannot start here (e.g. its model is not registered on this engine): drop it, saying why.
        if (await store.queue.take(record.id)) this.settle(record.id, error)
        return
      }
      this.runningHere.add(record.id)
      turn.done.then(
        (result) => this.settle(record.id, null, result),
        () => this.runningHere.delete(record.id), // not started: another engine took it, or the session is busy
      )
    } catch {
      // a read failed (database closing): the next drain or sweep tries again
    } finally {
      this.draining.delete(sessionId)
    }
  }

  /** Rejects the handles still waiting (the engine closes; the prompts stay queued for other engines). */
  close(): void {
    clearInterval(this.poll)
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
    this.poll = setInterval(() => void this.check(), pollMs)
    this.poll.unref()
  }

  /** Handles of prompts another engine runs (or cancelled there): settled from the rows. */
  private async check(): Promise<void> {
    if (this.waiters.size === 0) {
      clearInterval(this.poll)
      this.poll = undefined
      return
    }
    const { store } = this.deps
    for (const [id, waiter] of [...this.waiters]) {
      if (this.runningHere.has(id) || this.deps.isClosed()) continue
      try {
        const turn = await store.turns.get(id)
        if (turn?.outcome) {
          const messages = (await store.messages.list(turn.sessionId)).filter((m) => m.info.turnId === id)
          this.settle(id, null, {
            turnId: id,
            sessionId: turn.sessionId,
            outcome: turn.outcome,
            ...(turn.error ? { error: errorFromRecord(turn.error) } : {}),
            usage: usageOfMessages(id, messages.map((m) => m.info)),
            text: finalTextOf(messages),
          })
        } else if (!turn && !(await store.queue.get(id))) {
          this.settle(id, new QueuedPromptCancelledError(waiter.sessionId, id))
        } else if (!turn) {
          await this.drain(waiter.sessionId)
        }
      } catch {
        // the database is closing: the engine's close settles the handles
      }
    }
  }
}
