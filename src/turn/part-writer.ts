/**
 * The part writer owns a turn's rows while they change: its parts and its messages' info.
 * Each change is told to its listener at once (the turn publishes it). Deltas, new parts and
 * message changes are written at most every `flushIntervalMs`, or earlier with the next
 * transition row (a step's opening parts ride with the row that ends the step: no commit of
 * their own between the request and the first delta); part closes and tool state changes are
 * written at the next turn of the write queue, coalesced with whatever else is dirty. A crash
 * loses at most one flush interval. A flush writes messages before parts, so a part never
 * reaches the database before its message. Never one database write per delta.
 *
 * The interval flushes of every turn fall on the same ticks (multiples of the interval), and
 * ask for a shared transaction: the turns streaming on one engine write their text in one
 * commit per tick where the store groups commits (SQLite, PostgreSQL), not one each.
 */
import type { MessageInfo, Part, TextPart } from '../core/types'
import type { Store } from '../store/store'
import { deferred } from '../core/deferred'
import { OutageRetry, type OutagePolicy } from '../store/outage'
import type { WriteQueue } from './write-queue'

/** Who hears of the changes the writer takes: a part opened or changed, a delta, a message's info. */
export interface PartWriterListener {
  part(part: Part): void
  delta(part: TextPart, delta: string): void
  message(info: MessageInfo): void
}

export interface PartWriterOptions {
  store: Pick<Store, 'transaction'>
  queue: WriteQueue
  /** Told of every change as it happens (the turn publishes it); the writer only writes. */
  listener: PartWriterListener
  flushIntervalMs: number
  now: () => number
  /**
   * Runs first in every transaction that writes the turn's rows and throws when this engine no
   * longer owns the turn (fencing), so nothing is written after a takeover.
   */
  fence?: (tx: Store) => Promise<void>
  /** A write that fails for a reason that passes is tried again until the outage has lasted this long (store/outage.ts). */
  outage?: OutagePolicy
}

export class PartWriter {
  /**
   * Settles with the error of the first flush that failed (its rows stay dirty for the next
   * write): the turn decides what that means (its log fails the turn).
   */
  readonly #failed = deferred<unknown>()
  readonly failed: Promise<unknown> = this.#failed.promise
  private dirty = new Map<string, Part>()
  private dirtyMessages = new Map<string, MessageInfo>()
  private touched = new Set<string>()
  private timer: NodeJS.Timeout | undefined
  private flushQueued = false
  private sealed = false
  readonly #outage: OutageRetry

  constructor(private readonly options: PartWriterOptions) {
    this.#outage = new OutageRetry(options.outage ?? { outageMs: 0 })
  }

  /**
   * A new part: published now, written by the interval flush or with the next transition row.
   * `message`: the info of the part's message when this is its first part (a message is written
   * with its first part, so a step that ends before any leaves none).
   */
  add(part: Part, message?: MessageInfo): void {
    if (this.sealed) return
    if (message) this.message(message)
    this.publish(part)
    this.markDirty(part)
    this.flushLater()
  }

  /** Appends streamed text: published now, written by the interval flush. */
  append(part: TextPart, delta: string): void {
    if (this.sealed) return
    part.text += delta
    this.options.listener.delta(part, delta)
    this.markDirty(part)
    this.flushLater()
  }

  /** The caller changed `part` at a boundary (closed it, moved a tool to a new state). */
  changed(part: Part): void {
    if (this.sealed) return
    this.publish(part)
    this.markDirty(part)
    this.flushSoon()
  }

  /**
   * Like `changed`, but written only with the next transition row, in its transaction (an
   * approval decision must commit together with the transition it causes).
   */
  stage(part: Part): void {
    if (this.sealed) return
    this.publish(part)
    this.markDirty(part)
  }

  /**
   * A message's info changed (created, usage added, completed): published now, written by the
   * interval flush or with the next transition row (which every change of a step's end precedes).
   */
  message(info: MessageInfo): void {
    if (this.sealed) return
    this.options.listener.message(info)
    this.dirtyMessages.set(info.id, info)
    this.flushLater()
  }

  /**
   * Removes and returns what is dirty, for a caller that writes it inside its own transaction
   * (the turn log). The interval flush stays armed: it writes what is dirty when it fires, or
   * nothing (a timer cleared and made again at every transition cost more than the flush it saved).
   */
  takeDirty(): { messages: MessageInfo[]; parts: Part[] } {
    const messages = [...this.dirtyMessages.values()]
    const parts = [...this.dirty.values()]
    this.dirtyMessages.clear()
    this.dirty.clear()
    return { messages, parts }
  }

  /**
   * Writes what is dirty, and then `more` (the turn log's transition rows), in one transaction.
   * A failure that passes (the database restarting, busy, full) is waited out and the same
   * transaction tried again (`more` runs again: it must tell a lost commit that committed). If
   * the transaction fails for good, what it took is dirty again, so the next write carries it:
   * a rolled-back write loses nothing.
   *
   * The fence runs first unless `more` fences the write itself (`fencedByMore`). `operation`
   * names the write for whoever hears that it waits.
   *
   * @example
   * await writer.commit((tx) => writePlan(tx, fence, plan), { operation: 'recording the transition to streaming' })
   */
  async commit(more?: (tx: Store) => Promise<void>, options: { fencedByMore?: boolean; operation?: string; shared?: boolean } = {}): Promise<void> {
    const { messages, parts } = this.takeDirty()
    const write = async (tx: Store) => {
      if (!options.fencedByMore) await this.options.fence?.(tx)
      for (const info of messages) await tx.messages.upsert(info)
      await tx.messages.upsertParts(parts, this.options.now())
      await more?.(tx)
    }
    const transaction = () => this.options.store.transaction(write, options.shared ? { shared: true } : undefined)
    try {
      await this.#outage.run(options.operation ?? 'writing parts', transaction)
    } catch (error) {
      for (const info of messages) if (!this.dirtyMessages.has(info.id)) this.dirtyMessages.set(info.id, info)
      for (const part of parts) if (!this.dirty.has(part.id)) this.dirty.set(part.id, part)
      throw error
    }
  }

  /** Writes every dirty row now (queued behind earlier writes), in one transaction (shared: nobody waits on it). */
  flush(): Promise<void> {
    return this.options.queue.run(async () => {
      this.flushQueued = false
      if (this.dirty.size === 0 && this.dirtyMessages.size === 0) return
      await this.commit(undefined, { shared: true })
    })
  }

  /** After the turn's last write: later changes (a tool that ignores its abort signal) are dropped. */
  seal(): void {
    this.sealed = true
    this.clearTimer()
  }

  private markDirty(part: Part): void {
    this.dirty.set(part.id, part)
    this.touched.add(part.id)
  }

  /** Ids of the parts changed since the last call: the parts a transition row names. */
  takeTouched(): string[] {
    const ids = [...this.touched]
    this.touched.clear()
    return ids
  }

  /** Arms the interval flush for the next tick (once: what gets dirty meanwhile rides with it). */
  private flushLater(): void {
    if (this.timer) return
    const interval = this.options.flushIntervalMs
    this.timer = setTimeout(() => {
      this.timer = undefined
      if (this.dirty.size > 0 || this.dirtyMessages.size > 0) this.flushSoon()
    }, interval - (Date.now() % interval))
    this.timer.unref?.()
  }

  private flushSoon(): void {
    if (this.flushQueued) return
    this.flushQueued = true
    // After the I/O callbacks of this loop turn: the boundaries one network read carries (a text's
    // end, a tool call, the step's finish) share one transaction, or ride with the transition row.
    setImmediate(() => this.flush().catch((error: unknown) => this.#failed.resolve(error)))
  }

  private clearTimer(): void {
    if (this.timer) {
      clearTimeout(this.timer)
      this.timer = undefined
    }
  }

  private publish(part: Part): void {
    this.options.listener.part(part)
  }
}
