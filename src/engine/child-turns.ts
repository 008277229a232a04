/**
 * Run trees, the engine's side: the runner an `agentTool` call starts its child turn through
 * (a child session of the calling turn's, a turn linked to the parent turn and its call, in the
 * parent's tree), the wait for the child's end wherever it runs, the cascade of an abort, and the
 * tree a recovered turn joins.
 *
 * One child per call: the child is looked up by (parent turn, call id) first, and the turn row's
 * unique index on that pair refuses a second. So a call that runs again after a crash (an agent
 * tool is idempotent) finds the child it started and waits for it, whichever engine resumes it.
 */
import { createHash } from 'node:crypto'
import { TurnOwnershipLostError, TurnParkedError } from '../core/errors'
import type { ResolvedConfig } from '../config/resolved-config'
import { turnRequest } from '../conversation/turn-options'
import { turnUsages } from '../conversation/history'
import type { ChildProgress } from '../core/bus'
import type { TurnRecord, Usage } from '../core/types'
import { untilAborted } from '../core/until-aborted'
import type { Store } from '../store/store'
import type { ChildTurnCall, ChildTurnResult } from '../tools/child-turns'
import type { ParentTurn, TurnChildren, TurnDeps } from '../turn/run-turn'
import type { TurnServices } from '../turn/turn-config'
import type { RunningTurn } from '../turn/turn-handle'
import { finalTextOf } from '../turn/turn-result'
import { stepStreamState } from '../../machines/turn.machine'
import { startTurn } from '../turn/turn-starts'
import { abortAnywhere, remoteControl } from './control-calls'
import { takeOverTurns } from './recovery'
import type { RunningTurns } from './running-turns'
import type { StoreFeeds } from './store-feeds'

export interface ChildTurnDeps {
  config: ResolvedConfig
  services: TurnServices
  running: RunningTurns
  /** True once the engine closed: a child's abort then stores no request for another engine. */
  isClosed(): boolean
  /** PostgreSQL notifications: an abort stored for another engine is known handled at once. */
  feeds?: Pick<StoreFeeds, 'controlOutcomes'>
  /** A host that runs each child turn as a call of its own (Restate): told of each child a parent waits on. */
  childHost?: ChildHost
}

/**
 * A host of turns that runs each child turn as a call of its own (`turnchart/restate`: a call to
 * the child session's object), so that the child's waits, crashes and retries are the host's
 * like any turn's. Its children park as any turn does; the parent waits for their rows.
 */
export interface ChildHost {
  /** The turn `parentTurnId` waits on `child`, which has not ended: the host drives it. */
  waitsOn(parentTurnId: string, child: { sessionId: string; turnId: string }): void
}

/** What a parent turn's child runner works with: the engine's parts, the parent's turn deps, and what they make. */
interface ChildRunDeps extends ChildTurnDeps {
  turns: TurnDeps
  /** Aborts the running turn of a session another engine runs (a stored control request). */
  abortElsewhere(sessionId: string): Promise<void>
  /** Takes over turns whose engine is gone (a child left by a crash that no engine resumes yet). */
  recover(): Promise<unknown>
}

/**
 * The deterministic id of the child session of a call: the same call finds the same session,
 * also when a crash came between the session's insert and its turn's.
 */
export function childSessionId(parentTurnId: string, callId: string): string {
  return `ses_${createHash('sha256').update(`${parentTurnId}\u0000${callId}`).digest('hex').slice(0, 26)}`
}

/**
 * The child turn runner of each turn (`TurnDeps.children`).
 *
 * @example
 * const turns: TurnDeps = { ..., children: childTurns({ config, services, running, isClosed }) }
 */
export function childTurns(engine: ChildTurnDeps): (parent: ParentTurn, turns: TurnDeps) => TurnChildren {
  return (parent, turns) => {
    // Made from the turn deps the call runs with, so the engine builds its parts in order: the
    // recovery and the stored abort a child may need are the ones that run turns with these deps.
    const recover = () => takeOverTurns({ ...engine, turns })
    const remote = remoteControl({ store: turns.store, config: engine.config, running: engine.running, recover, ...(engine.feeds ? { feeds: engine.feeds } : {}) })
    const abortElsewhere = (sessionId: string) => (engine.isClosed() ? Promise.resolve() : abortAnywhere(remote, engine.running, sessionId))
    const deps: ChildRunDeps = { ...engine, turns, recover, abortElsewhere }
    let started = false
    return {
      async run(call) {
        started = true
        return runChild(deps, parent, call)
      },
      async descendantUsages(): Promise<Usage[] | undefined> {
        if (!started) return undefined
        const store = deps.turns.store
        const tree = await store.turns.descendants([parent.turnId])
        const usages = await turnUsages(store, tree)
        return tree.map((t) => usages.get(t.id)!)
      },
    }
  }
}

async function runChild(deps: ChildRunDeps, parent: ParentTurn, call: ChildTurnCall): Promise<ChildTurnResult> {
  const { store } = deps.turns
  if (call.signal.aborted) throw call.signal.reason
  // Looked up first: a resumed call finds the child it started before the crash and waits for it.
  // The fallback in the catch below is for a race only (another engine storing the call's child
  // after this lookup); without this lookup every resumed call would start a doomed child first
  // (test/crash/run-tree-kill.test.ts counts the starts).
  const existing = await store.turns.childOfCall(parent.turnId, call.callId)
  const sessionId = existing?.sessionId ?? childSessionId(parent.turnId, call.callId)
  if (!existing) await ensureChildSession(store, sessionId, parent.sessionId)
  let childId = existing?.id ?? startChild(deps, parent, call, sessionId).id
  if (!existing?.outcome) deps.childHost?.waitsOn(parent.turnId, { sessionId, turnId: childId })
  // An abort of the call (the parent aborted, the call timed out) aborts the child, wherever it
  // runs; a parent leaving this engine without ending (close, lost) leaves its child running.
  const onAbort = () => {
    if (parent.leaving()) return
    const here = deps.running.find(childId)
    if (here) here.abort('the parent turn was aborted')
    else void deps.abortElsewhere(sessionId).catch(() => undefined)
  }
  call.signal.addEventListener('abort', onAbort, { once: true })
  try {
    return await untilAborted(waitForChild(deps, parent, call.callId, childId, sessionId, call.signal), call.signal)
  } catch (error) {
    // The child we started could not start: another engine running the same call (a takeover
    // while this one stalled) stored its child first, and the unique index refused ours. Wait for that one.
    const other = existing || call.signal.aborted ? undefined : await store.turns.childOfCall(parent.turnId, call.callId)
    if (!other || other.id === childId) throw error
    childId = other.id
    return await untilAborted(waitForChild(deps, parent, call.callId, other.id, other.sessionId, call.signal), call.signal)
  } finally {
    call.signal.removeEventListener('abort', onAbort)
  }
}

/** Starts the call's child turn in its session, in the parent's tree; tracked as any turn this engine runs. */
function startChild(deps: ChildRunDeps, parent: ParentTurn, call: ChildTurnCall, sessionId: string): RunningTurn {
  const request = turnRequest(deps.config, deps.services, sessionId, call.options)
  const turn = startTurn(deps.turns, sessionId, [{ type: 'text', text: call.prompt }], {
    ...request,
    child: { parentTurnId: parent.turnId, parentCallId: call.callId, tree: parent.tree },
  })
  return deps.running.track(turn)
}

/** The child session of a call, created when missing (its id is the call's: a second try finds it). */
async function ensureChildSession(store: Store, sessionId: string, parentSessionId: string): Promise<void> {
  if (await store.sessions.get(sessionId)) return
  const now = Date.now()
  // A child session belongs to its parent's tenant.
  const tenant = (await store.sessions.get(parentSessionId))?.tenant
  await store.sessions.insert({ id: sessionId, title: null, time: { created: now, updated: now }, parentSessionId, ...(tenant !== undefined ? { tenant } : {}) }).catch(async (error: unknown) => {
    if (!(await store.sessions.get(sessionId))) throw error // not a second insert of the same session
  })
}

/**
 * The child's end: from its handle while this engine runs it, else from its row (another
 * engine runs it, or recovery has not resumed it yet), checked every `controlPollIntervalMs`.
 */
async function waitForChild(deps: ChildRunDeps, parent: ParentTurn, callId: string, childId: string, sessionId: string, signal: AbortSignal): Promise<ChildTurnResult> {
  const { store } = deps.turns
  const pollMs = Math.max(10, deps.config.controlPollIntervalMs)
  while (!signal.aborted) {
    const here = deps.running.find(childId)
    if (here) {
      const stopRelay = relayProgress(here, parent, callId)
      try {
        const result = await here.done
        return { turnId: childId, sessionId, outcome: result.outcome, text: result.text, ...(result.error ? { error: result.error.toJSON() } : {}) }
      } catch (error) {
        // Lost to another engine, or parked (its host takes it again): it goes on, and its row will say how it ended.
        if (!TurnOwnershipLostError.isInstance(error) && !TurnParkedError.isInstance(error)) throw error
      } finally {
        stopRelay()
      }
    }
    const row = await store.turns.get(childId)
    if (!row) throw new Error(`the child turn ${childId} was not stored`)
    if (row.outcome) return resultOfRow(store, row)
    if (row.leaseUntil !== null && row.leaseUntil !== undefined && row.leaseUntil < Date.now()) void deps.recover().catch(() => undefined)
    await sleep(pollMs, signal)
  }
  throw signal.reason
}

/**
 * Tells the parent what its child (running here) does, as `child.progress` events of the parent:
 * each state the child enters, each text part it finishes, the approvals it or a turn below it
 * waits for, and the end of such a call. One event per transition or part end, never per delta.
 */
function relayProgress(child: RunningTurn, parent: ParentTurn, callId: string): () => void {
  let state = stepStreamState
  const asked = new Set<string>()
  const publish = (progress: Omit<ChildProgress, 'turnId' | 'sessionId' | 'state'>) =>
    parent.publish({ type: 'child.progress', sessionId: parent.sessionId, turnId: parent.turnId, callId, child: { turnId: child.id, sessionId: child.sessionId, state, ...progress } })
  return child.subscribe((event) => {
    if (event.type === 'turn.transition' && event.turnId === child.id && event.to !== event.from) {
      state = event.to
      publish({})
    } else if (event.type === 'approval.requested' && event.turnId === child.id) {
      for (const call of event.calls) asked.add(call.callId)
      publish({ approvals: event.calls.map((call) => ({ ...call, turnId: child.id, state })) })
    } else if (event.type === 'child.progress' && event.turnId === child.id && (event.child.approvals || event.child.part)) {
      // A grandchild's approvals (and their ends) go up to the root's page.
      for (const call of event.child.approvals ?? []) asked.add(call.callId)
      publish({ ...(event.child.approvals ? { approvals: event.child.approvals } : {}), ...(event.child.part ? { part: event.child.part } : {}) })
    } else if (event.type === 'part.updated') {
      const { part } = event
      if (part.type === 'text' && part.step !== undefined && part.time.end !== undefined && part.text !== '') publish({ text: part.text })
      else if (part.type === 'tool' && asked.has(part.callId) && (part.state.status === 'completed' || part.state.status === 'error')) publish({ part })
    }
  })
}

async function resultOfRow(store: Store, row: TurnRecord): Promise<ChildTurnResult> {
  const messages = (await store.messages.list(row.sessionId)).filter((m) => m.info.turnId === row.id)
  return { turnId: row.id, sessionId: row.sessionId, outcome: row.outcome!, text: finalTextOf(messages), ...(row.error ? { error: row.error } : {}) }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms)
    function done() {
      clearTimeout(timer)
      signal.removeEventListener('abort', done)
      resolve()
    }
    signal.addEventListener('abort', done, { once: true })
  })
}
