/**
 * Applies control requests (approve, deny, abort) that other engines stored for the turns this
 * engine runs. It polls: one small query per interval while turns run, nothing when none does.
 * Polling (not PostgreSQL's LISTEN/NOTIFY) keeps one path for both dialects; the bound on how
 * soon a request takes effect is the interval.
 */
import type { ControlRequest, ControlStore } from '../store/store'

/** What the poller needs of a running turn: its id and the three decisions. */
export interface ControlTarget {
  readonly id: string
  approve(callId: string, options?: { input?: unknown }): Promise<void> | void
  deny(callId: string, reason?: string): Promise<void> | void
  abort(reason?: string): void
}

export interface ControlPoller {
  /**
   * While turns run, the poll keeps the process alive: a turn waiting for approval has no other
   * I/O, and its decision may come from another engine. The engine says so as turns start and end.
   */
  keepAlive(running: boolean): void
  stop(): void
}

/**
 * Polls `requests` every `intervalMs` for the turns `running()` returns and applies them; each
 * request is marked handled, with the reason when it could not be applied.
 *
 * @example
 * const poller = startControlPoller({ requests, running: () => [...active.values()], intervalMs: 200, onError })
 * poller.stop()
 */
export function startControlPoller(options: {
  requests: Pick<ControlStore, 'pending' | 'handled'>
  running: () => ControlTarget[]
  intervalMs: number
  onError: (error: unknown) => void
}): ControlPoller {
  let busy = false
  const tick = async () => {
    const turns = options.running()
    if (busy || turns.length === 0) return
    busy = true
    try {
      const byId = new Map(turns.map((t) => [t.id, t]))
      for (const request of await options.requests.pending([...byId.keys()])) {
        const turn = byId.get(request.turnId)
        if (!turn) continue
        await options.requests.handled(request.id, await apply(turn, request), Date.now())
      }
    } catch (error) {
      options.onError(error)
    } finally {
      busy = false
    }
  }
  const timer = setInterval(() => void tick(), options.intervalMs)
  timer.unref()
  return {
    keepAlive: (running) => void (running ? timer.ref() : timer.unref()),
    stop: () => clearInterval(timer),
  }
}

/** Applies one request; returns null when applied, or why it could not be. */
async function apply(turn: ControlTarget, request: ControlRequest): Promise<string | null> {
  try {
    if (request.kind === 'abort') turn.abort(request.reason ?? 'aborted from another engine')
    else if (request.kind === 'approve') await turn.approve(request.callId ?? '', request.input === undefined ? undefined : { input: request.input })
    else await turn.deny(request.callId ?? '', request.reason ?? undefined)
    return null
  } catch (error) {
    return error instanceof Error ? error.message : String(error)
  }
}
