/**
 * The part writer owns a turn's parts while they change. Deltas are published at once and
 * written at most every `flushIntervalMs`; part boundaries (open, close, tool state changes)
 * are written at the next turn of the write queue, coalesced with whatever else is dirty.
 * Never one database write per delta.
 */
import type { Bus } from '../bus'
import type { Part, TextPart } from '../types'
import type { Repository } from './repository'
import type { WriteQueue } from './write-queue'

export interface PartWriterOptions {
  repo: Repository
  queue: WriteQueue
  bus: Bus
  flushIntervalMs: number
  now: () => number
  /** A flush failed: the turn decides what that means. */
  onError: (error: unknown) => void
}

export class PartWriter {
  private dirty = new Map<string, Part>()
  private timer: NodeJS.Timeout | undefined
  private flushQueued = false
  private sealed = false

  constructor(private readonly options: PartWriterOptions) {}

  /** A new part: published and written at the next boundary flush. */
  add(part: Part): void {
    if (this.sealed) return
    this.publish(part)
    this.markDirty(part)
    this.flushSoon()
  }

  /** Appends streamed text: published now, written by the interval flush. */
  append(part: TextPart, delta: string): void {
    if (this.sealed) return
    part.text += delta
    this.options.bus.publish({
      type: 'part.delta',
      sessionId: part.sessionId,
      messageId: part.messageId,
      partId: part.id,
      field: 'text',
      delta,
    })
    this.markDirty(part)
    if (!this.timer) {
      this.timer = setTimeout(() => {
        this.timer = undefined
        this.flushSoon()
      }, this.options.flushIntervalMs)
      this.timer.unref?.()
    }
  }

  /** The caller changed `part` at a boundary (closed it, moved a tool to a new state). */
  changed(part: Part): void {
    if (this.sealed) return
    this.publish(part)
    this.markDirty(part)
    this.flushSoon()
  }

  /**
   * Removes and returns the dirty parts, for a caller that writes them inside its own
   * transaction (the transition recorder). Cancels the pending interval flush.
   */
  takeDirty(): Part[] {
    this.clearTimer()
    const parts = [...this.dirty.values()]
    this.dirty.clear()
    return parts
  }

  /** Writes every dirty part now (queued behind earlier writes). */
  flush(): Promise<void> {
    return this.options.queue.run(async () => {
      this.flushQueued = false
      const parts = this.takeDirty()
      await this.options.repo.upsertParts(parts, this.options.now())
    })
  }

  /** After the turn's last write: later changes (a tool that ignores its abort signal) are dropped. */
  seal(): void {
    this.sealed = true
    this.clearTimer()
  }

  private markDirty(part: Part): void {
    this.dirty.set(part.id, part)
  }

  private flushSoon(): void {
    if (this.flushQueued) return
    this.flushQueued = true
    this.flush().catch(this.options.onError)
  }

  private clearTimer(): void {
    if (this.timer) {
      clearTimeout(this.timer)
      this.timer = undefined
    }
  }

  private publish(part: Part): void {
    this.options.bus.publish({ type: 'part.updated', sessionId: part.sessionId, part: structuredClone(part) })
  }
}
