/**
 * Applies control requests (approve, deny, abort) that other engines stored for the turns this
 * engine runs. It polls: one small query per interval while turns run, nothing when none does.
 * On PostgreSQL with notifications it is also woken at once when a request is stored for one of
 * its turns (`ControlRequestFeed`); the poll stays, as the fallback that needs nothing to work
 * (SQLite, a pooler that cannot LISTEN, a listening connection that is down).
 */
import type { ControlRequest, ControlStore } from '../store/store'
import { checkResolution, type CallResolution } from '../tools/resolve-call'

/** What the poller needs of a running turn: its id and the decisions on it. */
export interface ControlTarget {
  readonly id: string
  approve(callId: string, options?: { input?: unknown; by?: string }): Promise<void> | void
  deny(callId: string, options?: { reason?: string; by?: string }): Promise<void> | void
  abort(reason?: string): void
  /** Settles a call in doubt or deferred (`engine.resolveCall`); the resolution is checked already. */
  resolveCall(callId: string, resolution: CallResolution): Promise<void> | void
}

/** Pushed news of stored requests (PostgreSQL notifications), when the engine listens. */
export interface ControlRequestFeed {
  /**
   * Calls `listener` with the turn a request was stored for, or with no turn when requests may
   * have been missed (the listening connection was down). Returns the unsubscribe.
   */
  subscribe(listener: (turnId?: string) => void): () => void
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
 * Polls `requests` every `intervalMs` for the turns `running()` returns, and at once when `feed`
 * says a request was stored for one of them, and applies them; each request is marked handled,
 * with the reason when it could not be applied.
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
  feed?: ControlRequestFeed
}): ControlPoller {
  let busy = false
  // A wake that came during a read: the read may have missed its request, so read once more.
  let again = false
  const tick = async () => {
    const turns = options.running()
    if (turns.length === 0) return
    if (busy) {
      again = true
      return
    }
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
    if (again) {
      again = false
      await tick()
    }
  }
  const timer = setInterval(() => void tick(), options.intervalMs)
  timer.unref()
  const unsubscribe = options.feed?.subscribe((turnId) => {
    if (turnId === undefined || options.running().some((t) => t.id === turnId)) void tick()
  })
  return {
    keepAlive: (running) => void (running ? timer.ref() : timer.unref()),
    stop: () => {
      clearInterval(timer)
      unsubscribe?.()
    },
  }
}

/**
 * Applies the requests stored for `turn` and not yet handled (a turn just taken: those stored
 * while it was parked), each marked handled as the poller marks it.
 *
 * @example
 * await applyPending(store.controls, turn)
 */
export async function applyPending(requests: Pick<ControlStore, 'pending' | 'handled'>, turn: ControlTarget): Promise<void> {
  for (const request of await requests.pending([turn.id])) await requests.handled(request.id, await apply(turn, request), Date.now())
}

/** Applies one request; returns null when applied, or why it could not be. */
async function apply(turn: ControlTarget, request: ControlRequest): Promise<string | null> {
  try {
    if (request.kind === 'abort') turn.abort(request.reason ?? 'aborted from another engine')
    const by = request.by !== undefined ? { by: request.by } : {}
    if (request.kind === 'resolve') await turn.resolveCall(request.callId ?? '', checkResolution(request.input))
    else if (request.kind === 'approve') await turn.approve(request.callId ?? '', { ...(request.input === undefined ? {} : { input: request.input }), ...by })
    else if (request.kind === 'deny') await turn.deny(request.callId ?? '', { ...(request.reason ? { reason: request.reason } : {}), ...by })
    return null
  } catch (error) {
    return error instanceof Error ? error.message : String(error)
  }
}
