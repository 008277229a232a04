/**
 * A reader of a server-sent event stream for tests: the events as they arrive, and a wait for
 * the first one (past or future) that matches.
 */

export interface StreamEvent {
  event: string
  data: any
}

export interface EventStreamReader {
  /** Every event received so far. */
  events: StreamEvent[]
  /** Resolves with the first event, received or to come, for which `match` holds. */
  next(match: (e: StreamEvent) => boolean, timeoutMs?: number): Promise<StreamEvent>
  close(): void
}

/**
 * @example
 * const stream = await readEvents(`${viewer.url}api/live?session=${id}`)
 * await stream.next((e) => e.event === 'session' && e.data.turns.length === 1)
 */
export async function readEvents(url: string): Promise<EventStreamReader> {
  const controller = new AbortController()
  const response = await fetch(url, { signal: controller.signal })
  if (!response.ok || !response.body) throw new Error(`${url}: ${response.status}`)
  const events: StreamEvent[] = []
  const waiters = new Set<{ match: (e: StreamEvent) => boolean; resolve: (e: StreamEvent) => void }>()
  const decoder = new TextDecoder()
  let buffer = ''
  void (async () => {
    try {
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
        buffer += decoder.decode(chunk, { stream: true })
        let end: number
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, end)
          buffer = buffer.slice(end + 2)
          const event = /^event: (.*)$/m.exec(block)?.[1]
          const data = /^data: (.*)$/m.exec(block)?.[1]
          if (!event || data === undefined) continue
          const received = { event, data: JSON.parse(data) }
          events.push(received)
          for (const waiter of waiters) if (waiter.match(received)) waiters.delete(waiter), waiter.resolve(received)
        }
      }
    } catch {
      // closed
    }
  })()
  return {
    events,
    next(match, timeoutMs = 15_000) {
      const seen = events.find(match)
      if (seen) return Promise.resolve(seen)
      return new Promise((resolve, reject) => {
        const waiter = { match, resolve: (e: StreamEvent) => (clearTimeout(timer), resolve(e)) }
        const timer = setTimeout(() => {
          waiters.delete(waiter)
          reject(new Error(`no matching event within ${timeoutMs} ms; received: ${events.map((e) => e.event).join(', ')}`))
        }, timeoutMs)
        waiters.add(waiter)
      })
    },
    close: () => controller.abort(),
  }
}
