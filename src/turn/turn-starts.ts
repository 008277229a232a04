/**
 * Where a turn starts: a new prompt (its prompt and its row stored in one transaction), a
 * turn recovery restored (its actor in `interrupted` or in a waiting state), or a turn whose
 * prompt was stored but whose first transition was not. Each is the runner (run-turn.ts)
 * with its own `begin`.
 */
import type { Actor, SnapshotFrom } from 'xstate'
import type { TurnMachine } from '../../machines/turn.machine'
import { turnStateName, waitOf } from '../../machines/turn.machine'
import type { TurnEvent, TurnInput } from '../../machines/turn.types'
import { SessionBusyError, SessionNotFoundError } from '../core/errors'
import { newId } from '../core/ids'
import { leaseEnd } from '../core/parking'
import type { UserPartDraft } from '../core/types'
import type { Store } from '../store/store'
import { waitAnnouncement } from '../chart/awaited-calls'
import { sessionStatus } from '../chart/session-status'
import type { RunTree } from './run-tree/run-tree'
import { runTurn, type TurnDeps } from './run-turn'
import type { TurnConfig } from './turn-config'
import type { RunningTurn } from './turn-handle'
import { TurnScope } from './turn-scope'

/** What a turn needs beyond its prompt (see src/conversation/turn-options.ts). */
export interface TurnRequest {
  /** The turn's id (a queued prompt's, given when it was queued); default a new one. */
  turnId?: string
  /** The chart's step limit. */
  maxSteps?: number
  /** Awaited before the prompt is stored (an interrupted turn's end). */
  before?(): Promise<void>
  /**
   * Runs in the transaction that stores the prompt, after the turn row is inserted: applies
   * the prompt's options (and whatever else must commit with the prompt) and resolves the
   * turn's configuration.
   */
  prepare(tx: Store, turnId: string): Promise<TurnConfig>
  /** Run trees: a child turn's parent turn, the parent's call that starts it, and the tree it joins. */
  child?: { parentTurnId: string; parentCallId: string; tree: RunTree }
}

type TurnSnapshot = SnapshotFrom<TurnMachine>

/** A new scope of `turnId`, written under `fence`; a child turn's names its parent (its events carry both ids). */
export function newScope(deps: TurnDeps, turnId: string, sessionId: string, fence = { owner: deps.owner, epoch: 0 }, parentTurnId?: string): TurnScope {
  const steers = deps.steersStored
  return new TurnScope({
    turnId,
    sessionId,
    store: deps.store,
    bus: deps.bus,
    fence,
    flushIntervalMs: deps.flushIntervalMs,
    ...(deps.outage ? { outage: deps.outage } : {}),
    ...(parentTurnId ? { parentTurnId } : {}),
    ...(steers ? { steersStored: () => steers(sessionId) } : {}),
  })
}

/**
 * Starts a turn for `prompt` in `sessionId`. The actor exists at once (in `idle`); it moves
 * to `streaming` when the prompt is stored.
 *
 * @example
 * const turn = startTurn(deps, session.id, [{ type: 'text', text: 'hi' }], turnRequest(config, services, session.id, {}))
 * const { outcome } = await turn.done
 */
export function startTurn(deps: TurnDeps, sessionId: string, prompt: UserPartDraft[], request: TurnRequest): RunningTurn {
  const turnId = request.turnId ?? newId('trn')
  const input: TurnInput = { turnId, sessionId, ...deps.chart, ...(request.maxSteps !== undefined ? { maxSteps: request.maxSteps } : {}) }
  const { child } = request
  const scope = newScope(deps, turnId, sessionId, undefined, child?.parentTurnId)
  return runTurn(deps, {
    scope,
    input,
    ...(child ? { tree: child.tree } : {}),
    async begin(actor: Actor<TurnMachine>, firstRow) {
      if (request.before) {
        // (awaited only when given: an abort right after `prompt` must find the prompt's write queued first)
        await request.before()
        if (actor.getSnapshot().status !== 'active') return null // aborted while waiting: nothing stored
      }
      await scope.userMessages.storePrompt(prompt, async (tx) => {
        const now = Date.now()
        if (!(await tx.sessions.lock(sessionId, now))) throw new SessionNotFoundError(sessionId)
        const open = await tx.turns.openOfSession(sessionId)
        if (open) throw new SessionBusyError(sessionId, open.id)
        await tx.turns.insert(
          {
            id: turnId,
            sessionId,
            state: 'idle',
            outcome: null,
            step: 0,
            attempt: 1,
            retryAt: null,
            error: null,
            time: { created: now, updated: now },
            owner: deps.owner,
            leaseUntil: leaseEnd(deps.leaseMs, now),
            ...(child ? { parentTurnId: child.parentTurnId, parentCallId: child.parentCallId, rootTurnId: child.tree.rootTurnId } : {}),
          },
          input,
        )
        return request.prepare(tx, turnId)
      }, firstRow({ type: 'turn.start' }))
      return null // sent inside the prompt's transaction
    },
  })
}

/**
 * Resumes a turn that recovery restored: its actor starts in `interrupted` (the crash is
 * already logged) and receives `turn.recover`, or goes on waiting in its waiting state.
 */
export function resumeTurn(
  deps: TurnDeps,
  restored: { scope: TurnScope; input: TurnInput; snapshot: TurnSnapshot; seq: number; recover: TurnEvent | null; tree?: RunTree; quiet?: boolean },
): RunningTurn {
  const { scope } = restored
  return runTurn(deps, {
    scope,
    input: restored.input,
    ...(restored.tree ? { tree: restored.tree } : {}),
    restored: { snapshot: restored.snapshot, seq: restored.seq },
    begin: async () => {
      const state = turnStateName(restored.snapshot)
      const wait = waitOf(state)
      // (`quiet`: a parked turn taken by the control that settles it now: nobody is to be asked again)
      if (wait && !restored.quiet) {
        // The wait goes on in this engine: say so, and ask again (the first request went to an engine that is gone).
        const { sessionId, turnId } = scope
        const { stepTools } = scope.messages
        scope.events.publish({ type: 'session.status', sessionId, status: sessionStatus(turnId, state, { toolParts: stepTools }) })
        scope.events.publish(waitAnnouncement(wait.awaits, { sessionId, turnId }, { stepTools, context: restored.snapshot.context }))
      }
      return restored.recover
    },
  })
}

/** Starts a turn whose prompt was stored but whose first transition was not (recovery). */
export function startTurnFromIdle(deps: TurnDeps, started: { scope: TurnScope; input: TurnInput; tree?: RunTree }): RunningTurn {
  return runTurn(deps, { ...started, begin: async () => ({ type: 'turn.start' }) })
}
