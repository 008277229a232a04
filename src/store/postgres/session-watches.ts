/**
 * The sessions an engine watches (`StoreNotifications.watch`: every write of their rows is
 * notified, not only their turns' ends), kept as rows of `turnchart_watches` with an expiry the
 * database's clock sets: refreshed while held, so a holder that dies stops being counted within
 * `ttlMs`. Counted per session here; a row is deleted only when this engine wrote it last.
 */

/** The listening connection's query, when it listens. */
type Query = (text: string, values?: unknown[]) => Promise<{ rows: Array<Record<string, unknown>> }>

export class SessionWatches {
  /** How many hold each session, and the `until` this engine last wrote (to delete only its own row). */
  readonly #held = new Map<string, { holders: number; until?: number }>()
  #lastRefresh = Date.now()

  constructor(
    private readonly table: string,
    private readonly ttlMs: number,
    /** The connection to write through, or undefined while none listens (the next refresh writes). */
    private readonly query: () => Query | undefined,
  ) {}

  /** Holds `sessionId` watched until the returned release. */
  hold(sessionId: string): () => void {
    const watch = this.#held.get(sessionId)
    if (watch) watch.holders++
    else {
      this.#held.set(sessionId, { holders: 1 })
      this.#write([sessionId]).catch(() => undefined)
    }
    let released = false
    return () => {
      const held = this.#held.get(sessionId)
      if (released || !held) return
      released = true
      if (--held.holders > 0) return
      this.#held.delete(sessionId)
      // Only the row this engine wrote last: another watcher that refreshed since keeps its own.
      const query = this.query()
      if (held.until !== undefined && query) query(`delete from ${this.table} where session_id = $1 and until = $2`, [sessionId, held.until]).catch(() => undefined)
    }
  }

  /** Writes every held watch again (a new connection's first act). */
  writeAll(): Promise<void> {
    return this.#write([...this.#held.keys()])
  }

  /** Refreshes the held watches when a third of their lifetime has passed (on the connection's heartbeat). */
  refreshIfDue(): void {
    if (Date.now() - this.#lastRefresh < this.ttlMs / 3) return
    this.#lastRefresh = Date.now()
    this.writeAll().catch(() => undefined)
  }

  /** Writes (or extends) the watches of `sessionIds` with the database's clock. */
  async #write(sessionIds: string[]): Promise<void> {
    const query = this.query()
    if (!query || sessionIds.length === 0) return
    const { rows } = await query(
      `insert into ${this.table} (session_id, until) select id, (extract(epoch from now()) * 1000)::bigint + $2 from unnest($1::text[]) id
       on conflict (session_id) do update set until = excluded.until returning session_id, until`,
      [sessionIds, this.ttlMs],
    )
    for (const row of rows) {
      const watch = this.#held.get(String(row.session_id))
      if (watch) watch.until = Number(row.until)
    }
  }
}
