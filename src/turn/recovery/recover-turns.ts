/**
 * Recovery: finds turns left unfinished by a process that died, claims each (one engine wins),
 * writes the crash into the turn's log with the parts closed, and resumes the turn from the
 * state it was in, or ends it (policy `abort`). The database rows are the source of truth;
 * the chart's context is rebuilt by replaying the log.
 */
import os from 'node:os'
import { transition, type SnapshotFrom } from 'xstate'
import { crashedState, interruptibleStates, stepStreamState, toolsState, turnMachine, turnStateName, waitOf, type TurnMachine } from '../../../machines/turn.machine'
import type { ToolSet } from 'ai'
import type { TurnEvent, TurnInput, TurnStall } from '../../../machines/turn.types'
import type { TurnchartEvent } from '../../core/bus'
import { serializeError, StorageError, TurnchartError, UnknownError } from '../../core/errors'
import { leaseEnd, parkedOwner } from '../../core/parking'
import { holdsLiveness } from '../../store/liveness-owner'
import { newId } from '../../core/ids'
import { isIdempotent } from '../../tools/tool-options'
import { doubtCall, isWaitingCall, rerunCall } from '../../tools/tool-part'
import { toolChange, type ToolFingerprint } from '../../tools/tool-fingerprint'

/** The tools a turn stored when it started, and the engine's now (a turn's configuration carries them). */
type PinnedTools = { pinned: ToolFingerprint; current: ToolFingerprint }
import { emptyTokens, type MessageWithParts, type Part, type ToolPart, type TransitionRecord, type TurnRecord } from '../../core/types'
import { ReplayMismatchError, replayTransitions } from '../replay'
import { turnAssistants } from '../turn-messages'
import { closeOpenWork } from '../turn-log/turn-end'
import { writePlan } from '../turn-log/log-rows'
import { planRows, planUnreplayable } from '../turn-log/row-plan'
import type { Store, TurnFence } from '../../store/store'

type TurnSnapshot = SnapshotFrom<TurnMachine>

/** A new owner id for an engine: host, pid, and a random part (two engines in one process). */
export function newOwnerId(): string {
  return `${os.hostname()}:${process.pid}:${newId('trn').slice(-8)}`
}

/**
 * True when an engine (`owner`) may take `turn` over: nobody owns it, its lease ran out (this
 * engine's own turns too: the caller skips the turns it runs, so an expired lease of its own is
 * a turn it lost track of, e.g. after its final write failed), or its owner was a process on
 * this host that is gone. A turn a host runs (`TurnHost`: its owner no engine's, no lease) is
 * never taken: its host runs it again.
 */
function isClaimable(turn: Pick<TurnRecord, 'owner' | 'leaseUntil'>, owner: string, now: number, gone: ReadonlySet<string>): boolean {
  if (!turn.owner) return true
  // A parked turn waits for its control (approve, deny, abort, a deadline), not for an engine.
  if (turn.owner === parkedOwner) return false
  if (turn.leaseUntil !== null && turn.leaseUntil !== undefined && turn.leaseUntil < now) return true
  // The database ended its engine's liveness (PostgreSQL: the connection that held it is gone).
  if (gone.has(turn.owner)) return true
  if (turn.owner === owner) return false
  const [host, pid] = turn.owner.split(':')
  if (host !== os.hostname()) return false
  const ownerPid = Number(pid)
  if (!Number.isInteger(ownerPid) || ownerPid === process.pid) return false
  try {
    process.kill(ownerPid, 0)
    return false
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ESRCH'
  }
}

/** What recovery reads and writes in the store. */
export type RecoveryStore = Pick<Store, 'turns' | 'transitions' | 'messages' | 'transaction'>

/** A recovered turn, handed over to run again in this engine. */
export interface ResumeRequest<C> {
  record: TurnRecord
  input: TurnInput
  fence: TurnFence
  /** The turn's own configuration (its stored options over the engine's). */
  config: C
  /** The session's messages from the latest summary, the interrupted work closed in them. */
  messages: MessageWithParts[]
  /** Where the chart resumes, the seq of its last row and the event that resumes it; absent: the turn never started (start it). */
  from?: { snapshot: TurnSnapshot; seq: number; recover: TurnEvent | null; quiet?: boolean }
}

/** Recovery's ports: the store, the turn's own configuration, and how a recovered turn runs again. */
export interface RecoveryPorts<C extends { tools: ToolSet }, T> {
  store: RecoveryStore
  /** This engine's owner id, written on the turns it claims, and how long its claim holds. */
  owner: string
  /** null: no lease (the host serializes the session's turns: Restate). */
  leaseMs: number | null
  policy: 'resume' | 'abort'
  /**
   * Which of `owners` (owner ids that say the database keeps their liveness: `holdsLiveness`)
   * are alive now; rejects when it cannot tell. Absent: every owner is waited for by its leases.
   */
  liveOwners?(owners: readonly string[]): Promise<ReadonlySet<string>>
  publish(event: TurnchartEvent): void
  turnConfig(turnId: string): Promise<C>
  resume(request: ResumeRequest<C>): T
}

/**
 * The turns an engine holds, as recovery asks: it recovers a turn only through `recoverOnce`,
 * which runs nothing for a turn that runs here or that another pass of the engine is recovering
 * (claimed, not resumed yet): an engine runs one life of a turn at a time.
 */
export interface TurnsHere {
  recoverOnce<R>(turnId: string, recover: () => Promise<R | undefined>): Promise<R | undefined>
}

/**
 * Recovery through its ports: claims each unfinished turn (one engine wins), writes the crash
 * with its parts closed, and hands the turn to `resume`; a turn whose log cannot be resumed is
 * ended as failed.
 */
export async function recoverWith<C extends { tools: ToolSet }, T>(ports: RecoveryPorts<C, T>, here: TurnsHere, only?: readonly string[]): Promise<T[]> {
  // Several turns at once (a handoff releases a whole engine's turns together): each waits on its
  // own reads and writes, not on the turns before it (a released turn's row is read on its own,
  // so the first is claimed before the last is read).
  const recovered = only
    ? await eachConcurrently(only, recoveryConcurrency, (id) =>
        here.recoverOnce(id, async () => {
          const record = await openTurnOf(ports.store, id)
          return record && recoverIfClaimed(ports, record)
        }),
      )
    : await sweepOpen(ports, here)
  return recovered.filter((turn): turn is Awaited<T> => turn !== undefined)
}

/** Every unfinished turn the store has, each taken over when it may be: its owner's lease ran out, or the database says its owner is gone. */
async function sweepOpen<C extends { tools: ToolSet }, T>(ports: RecoveryPorts<C, T>, here: TurnsHere): Promise<Array<T | undefined>> {
  const open = await ports.store.turns.open()
  const gone = await goneOwners(ports, open, Date.now())
  return eachConcurrently(open, recoveryConcurrency, (record) => here.recoverOnce(record.id, () => recoverIfClaimed(ports, record, gone)))
}

/**
 * The owners of `turns` that hold live leases but that the database says are gone (their
 * engine's connection ended: the process died). None when it cannot tell (no such capability, or
 * its connection down): their leases are waited for.
 */
async function goneOwners<C extends { tools: ToolSet }, T>(ports: RecoveryPorts<C, T>, turns: ReadonlyArray<Pick<TurnRecord, 'owner' | 'leaseUntil'>>, now: number): Promise<ReadonlySet<string>> {
  const asked = new Set(turns.flatMap(({ owner, leaseUntil }) => (owner && owner !== ports.owner && holdsLiveness(owner) && (leaseUntil ?? 0) >= now ? [owner] : [])))
  if (asked.size === 0 || !ports.liveOwners) return new Set()
  const alive = await ports.liveOwners([...asked]).catch(() => undefined)
  return alive ? new Set([...asked].filter((owner) => !alive.has(owner))) : new Set()
}

/** How many turns one pass recovers at once (their reads and writes share the engine's pool). */
const recoveryConcurrency = 16

/** `fn` of each item, at most `limit` at a time; the results in the items' order. */
async function eachConcurrently<I, R>(items: readonly I[], limit: number, fn: (item: I) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length)
  let next = 0
  const worker = async () => {
    while (next < items.length) {
      const i = next++
      results[i] = await fn(items[i])
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker))
  return results
}

/** One unfinished turn: claimed if it may be (one engine wins), then resumed; undefined when it is not this engine's to take. */
async function recoverIfClaimed<C extends { tools: ToolSet }, T>(ports: RecoveryPorts<C, T>, record: TurnRecord & { input: unknown }, gone: ReadonlySet<string> = new Set()): Promise<T | undefined> {
  const { store, owner } = ports
  if (!isClaimable(record, owner, Date.now(), gone)) return undefined
  // The lease as read goes with the claim: the row may have been read a while ago (a sweep of
  // many turns), and an owner that renewed its lease since is alive and keeps its turn.
  const expected = { owner: record.owner ?? null, epoch: record.epoch ?? 0, leaseUntil: record.leaseUntil ?? null }
  const fence = await store.turns.claim(record.id, expected, owner, leaseEnd(ports.leaseMs, Date.now())).catch(async () => {
    // Whether the claim landed is unknown (its connection lost): let go of it, in case it did.
    await store.turns.release(owner, [record.id]).catch(() => undefined)
    return null
  })
  if (!fence) return undefined
  try {
    return await recoverOne(ports, record, record.input as TurnInput, fence)
  } catch (error) {
    // The database failed under recovery (a connection lost): nothing is wrong with the turn.
    // Its claim is let go of (an engine takes it again at its next pass); `failed` is final, so
    // a passing fault must not end a turn.
    if (isStorageFault(error)) {
      await store.turns.release(owner, [record.id]).catch(() => undefined)
      return undefined
    }
    // One turn whose log cannot be resumed (a gap left by a failed write, a hand-edited row)
    // must not keep the engine from opening: end it as failed, its parts closed.
    await endUnrecoverable(ports, record, error, fence).catch(() => store.turns.release(owner, [record.id]).catch(() => undefined))
    return undefined
  }
}

/**
 * Takes a parked turn (its row owned by `parkedOwner`) into this engine: claimed from the parked
 * owner (one engine wins), then resumed as recovery resumes a turn, in the state it waits in.
 * Resolves undefined when the turn is not parked (any more), or another engine took it first.
 *
 * @example
 * const turn = await resumeParked(ports, turnId) // then approve, deny or abort it here
 */
export async function resumeParked<C extends { tools: ToolSet }, T>(ports: RecoveryPorts<C, T>, turnId: string): Promise<T | undefined> {
  const record = await ports.store.turns.get(turnId)
  if (!record || record.outcome || record.owner !== parkedOwner) return undefined
  return claimAndResume(ports, record, true)
}

/**
 * Takes an unfinished turn into this engine from whoever holds it now: Restate's next attempt
 * of the invocation that runs it (the attempt before it died, or is fenced off). Its row is
 * claimed as read, its epoch bumped, so an older attempt still running cannot write; then it is
 * resumed as recovery resumes a turn (a parked one quietly: the control that settles it follows).
 * Resolves undefined when the turn ended, or another claim came first.
 *
 * @example
 * const turn = await resumeHeld(ports, turnId)
 */
export async function resumeHeld<C extends { tools: ToolSet }, T>(ports: RecoveryPorts<C, T>, turnId: string): Promise<T | undefined> {
  const record = await ports.store.turns.get(turnId)
  if (!record || record.outcome) return undefined
  return claimAndResume(ports, record, record.owner === parkedOwner)
}

/** Claims `record` from its owner as read and resumes it; a parked turn's claim goes back to the parked owner when the database fails. */
async function claimAndResume<C extends { tools: ToolSet }, T>(ports: RecoveryPorts<C, T>, record: TurnRecord, quiet: boolean): Promise<T | undefined> {
  const { store } = ports
  const expected = { owner: record.owner ?? null, epoch: record.epoch ?? 0 }
  const fence = await store.turns.claim(record.id, expected, ports.owner, leaseEnd(ports.leaseMs, Date.now()))
  if (!fence) return undefined
  try {
    return await recoverOne(ports, record, (await store.turns.input(record.id)) as TurnInput, fence, quiet)
  } catch (error) {
    if (isStorageFault(error)) {
      // The database failed, not the turn: it goes back to its holder (a parked turn to waiting parked), and the caller fails with the fault.
      await store.turns.claim(record.id, fence, expected.owner ?? ports.owner, null).catch(() => undefined)
      throw error
    }
    await endUnrecoverable(ports, record, error, fence)
    return undefined
  }
}

/** A driver's error, or turnchart's StorageError: the database failed, not the turn's log. */
function isStorageFault(error: unknown): boolean {
  return !TurnchartError.isTurnchartError(error) || StorageError.isInstance(error)
}

/** The turn `id` if it is unfinished, with its chart input (a released turn: its row read, not every open turn's). */
async function openTurnOf(store: RecoveryStore, id: string): Promise<(TurnRecord & { input: unknown }) | undefined> {
  const [record, input] = await Promise.all([store.turns.get(id), store.turns.input(id)])
  return record && record.outcome === null ? { ...record, input } : undefined
}

async function endUnrecoverable<C extends { tools: ToolSet }, T>(ports: RecoveryPorts<C, T>, record: TurnRecord, cause: unknown, fence: TurnFence): Promise<void> {
  const now = Date.now()
  const error = serializeError(cause)
  const assistant = turnAssistants(await ports.store.messages.list(record.sessionId, { fromLatestSummary: true }), record.id).at(-1)
  const changed = closeInterruptedWork(assistant, record.sessionId, null, {}, now)
  await ports.store.transaction(async (tx) => {
    await tx.messages.upsertParts(changed, now)
    if (assistant) {
      assistant.info.error = error
      assistant.info.time.completed ??= now
      await tx.messages.upsert(assistant.info)
    }
    await writePlan(tx, fence, planUnreplayable(record, error, now))
  })
  ports.publish({ type: 'session.error', sessionId: record.sessionId, turnId: record.id, error })
}

/** `quiet`: a wait resumed to be settled at once (a parked turn taken by its control) is not announced again. */
async function recoverOne<C extends { tools: ToolSet }, T>(ports: RecoveryPorts<C, T>, claimed: TurnRecord, input: TurnInput, fence: TurnFence, quiet = false): Promise<T> {
  const { turn, snapshot, rows } = await readClaimed(ports, claimed, input, fence)
  const state = turn.record.state
  // The prompt was stored but the turn never started: start it now.
  if (state === 'idle') return ports.resume(turn)
  if (waitOf(state)) {
    // Nothing was in flight (the turn waits on a person or the world): it goes on waiting, now in this engine.
    const waiting = turnMachine.resolveState({ value: snapshot.value, context: snapshot.context })
    return ports.resume({ ...turn, from: { snapshot: waiting, seq: rows.length, recover: null, ...(quiet ? { quiet } : {}) } })
  }
  return resumeCrashed(ports, turn, snapshot, rows)
}

/**
 * The claimed turn read again now that the claim holds: the row read before it may be older than
 * the log (its owner, alive with an expired lease, wrote rows until the claim fenced it out).
 * Nobody else writes the turn now, so the row and the log read here must agree.
 */
async function readClaimed<C extends { tools: ToolSet }, T>(ports: RecoveryPorts<C, T>, claimed: TurnRecord, input: TurnInput, fence: TurnFence): Promise<{ turn: ResumeRequest<C>; snapshot: TurnSnapshot; rows: TransitionRecord[] }> {
  const { store } = ports
  const [current, rows, config, messages] = await Promise.all([
    store.turns.get(claimed.id),
    store.transitions.list(claimed.id),
    ports.turnConfig(claimed.id), // the turn's own model, tools and settings
    store.messages.list(claimed.sessionId, { fromLatestSummary: true }),
  ])
  const record = current ?? claimed
  const { snapshot } = replayTransitions(input, rows)
  const state = turnStateName(snapshot)
  if (state !== record.state) {
    // The turn row is written in the same transaction as each transition: they must agree.
    const detail = `the log leads to '${state}', the turn row says '${record.state}'`
    throw new ReplayMismatchError({ turnId: record.id, seq: rows.length, expected: state, logged: record.state, detail })
  }
  return { turn: { record, input, fence, config, messages }, snapshot, rows }
}

/** A turn that worked when its process died (or whose crash is logged): the crash logged, it resumes where it was, or a new step starts. */
async function resumeCrashed<C extends { tools: ToolSet }, T>(ports: RecoveryPorts<C, T>, turn: ResumeRequest<C>, snapshot: TurnSnapshot, rows: TransitionRecord[]): Promise<T> {
  const { record } = turn
  const state = record.state
  let seq = rows.length
  let interrupted = snapshot
  if (interruptibleStates.has(state)) {
    interrupted = await logCrash(ports, turn, { snapshot, state, seq })
    seq += 1
  } else if (state !== crashedState) {
    throw new UnknownError(`turn ${record.id} is open in state '${state}', which recovery cannot resume`)
  }
  const retryDelayMs = record.retryAt ? Math.max(0, record.retryAt - Date.now()) : 0
  // The deep history of `running` (where the crash was) goes with it: `turn.recover` resumes there.
  const restored = turnMachine.resolveState({ value: crashedState, context: interrupted.context, historyValue: historyByIds(interrupted.historyValue) })
  // A model call that was in flight is not resumed: its step was closed above, a new one starts.
  // (a turn left in `interrupted`, its crash logged by a run that went no further: where it was is the crash row's `from`)
  const crashedIn = state === crashedState ? rows.at(-1)?.from : state
  const recover: TurnEvent =
    ports.policy === 'abort' ? { type: 'turn.abort', reason: 'recovery policy abort' } : { type: 'turn.recover', retryDelayMs, ...(crashedIn === stepStreamState ? { restartStep: true } : {}) }
  return ports.resume({ ...turn, from: { snapshot: restored, seq, recover } })
}

/**
 * Logs that the turn's work in `at.state` was interrupted: its open work closed (streamed text
 * ends where the last flush left it, a running call runs again or is in doubt), and its row
 * into `interrupted` (`turn.crashed`, with the stall when its engine found it stalled). Returns
 * the interrupted snapshot.
 */
async function logCrash(
  ports: { store: RecoveryStore },
  turn: { record: TurnRecord; fence: TurnFence; config: { tools: ToolSet }; messages: MessageWithParts[] },
  at: { snapshot: TurnSnapshot; state: string; seq: number },
  stalled?: TurnStall,
): Promise<TurnSnapshot> {
  const { record, config, messages, fence } = turn
  const now = Date.now()
  const assistant = turnAssistants(messages, record.id).at(-1)
  const changed = closeInterruptedWork(assistant, record.sessionId, at.state, config.tools, now, (config as { pinnedTools?: PinnedTools }).pinnedTools)
  const crashed: TurnEvent = { type: 'turn.crashed', ...(stalled ? { stalled } : {}) }
  const [interrupted] = transition(turnMachine, at.snapshot, crashed)
  // (the retry wait's deadline is kept: the resumed wait ends there)
  const facts = { turnId: record.id, after: { state: at.state, seq: at.seq }, time: now, parts: changed.map((p) => p.id), storedDeadline: record.retryAt }
  const plan = planRows(facts, [{ event: crashed, to: crashedState, context: { step: record.step, attempt: record.attempt, retryDelayMs: 0 } }])
  await ports.store.transaction(async (tx) => {
    await tx.messages.upsertParts(changed, now)
    await writePlan(tx, fence, plan)
  })
  return interrupted
}

/**
 * Lets go of a turn this engine runs and found stalled (src/turn/stall-watch.ts), its run
 * stopped already: claimed again from that run (its epoch bumped, so a write of the stalled run
 * that lands late is refused), its stall logged as the interruption of its work (`turn.crashed
 * { stalled }`: the CLI and the viewer show it), then released, so that recovery (this
 * engine's, or another's at once on PostgreSQL) resumes it from `interrupted`. A turn stalled
 * in a state where nothing was in flight (a wait, on a write) is released as it is. If the
 * database does not answer, its lease runs out instead (nothing renews it).
 *
 * @example
 * await letStalledTurnGo(ports, turn.id, turn.fence, stall)
 */
export async function letStalledTurnGo<C extends { tools: ToolSet }, T>(ports: RecoveryPorts<C, T>, turnId: string, held: TurnFence, stall: TurnStall): Promise<void> {
  const { store, owner } = ports
  // (a lease that holds while this runs: this engine's own sweep must not take the turn meanwhile)
  const fence = await store.turns.claim(turnId, held, owner, leaseEnd(ports.leaseMs, Date.now()))
  if (!fence) return
  try {
    const record = await store.turns.get(turnId)
    if (!record || record.outcome !== null) return
    const [input, rows, config, messages] = await Promise.all([
      store.turns.input(turnId),
      store.transitions.list(turnId),
      ports.turnConfig(turnId),
      store.messages.list(record.sessionId, { fromLatestSummary: true }),
    ])
    const { snapshot } = replayTransitions(input as TurnInput, rows)
    const state = turnStateName(snapshot)
    if (state !== record.state || !interruptibleStates.has(state)) return
    await logCrash(ports, { record, fence, config, messages }, { snapshot, state, seq: rows.length }, stall)
  } finally {
    await store.turns.release(owner, [turnId])
  }
}

/**
 * A snapshot's history with its state nodes named by id, as XState persists it: the turn's
 * actor runs the chart with its real actors (the engine's `EngineChart`: other state nodes), and
 * restoring the snapshot finds these ids in that machine.
 */
function historyByIds(history: SnapshotFrom<TurnMachine>['historyValue']): SnapshotFrom<TurnMachine>['historyValue'] {
  const byIds = Object.fromEntries(Object.entries(history).map(([key, nodes]) => [key, nodes.map((node) => ({ id: node.id }))]))
  return byIds as unknown as SnapshotFrom<TurnMachine>['historyValue']
}

/**
 * What a crash leaves open in the turn's last assistant message, closed: streamed text ends
 * where the last flush left it; an interrupted step gets a `step-finish` with reason
 * `interrupted`; tool calls that were not done become errors, except idempotent tools of a
 * tool-running step, which run again. With no state (a turn that cannot be resumed),
 * everything open is closed.
 */
function closeInterruptedWork(assistant: MessageWithParts | undefined, sessionId: string, state: string | null, tools: ToolSet, now: number, pinned?: PinnedTools): Part[] {
  if (!assistant) return []
  const stepFinish: Part[] = []
  if (state === stepStreamState) {
    const step = Math.max(0, ...assistant.parts.map((p) => p.step ?? 0))
    const attempt = Math.max(0, ...assistant.parts.filter((p) => p.step === step).map((p) => p.attempt ?? 0))
    const finished = assistant.parts.some((p) => p.type === 'step-finish' && p.step === step && p.attempt === attempt)
    if (step > 0 && !finished) {
      const part: Part = {
        id: newId('prt', now),
        sessionId,
        messageId: assistant.info.id,
        step,
        attempt,
        type: 'step-finish',
        reason: 'interrupted',
        tokens: emptyTokens(),
        cost: 0,
        time: { start: now },
      }
      assistant.parts.push(part)
      stepFinish.push(part)
    }
  }
  // An idempotent tool that was running when the process died runs again; so does one whose
  // tool was removed or changed since the turn started, which the tool runner then refuses,
  // naming the tool and the change (src/tools/run-tools.ts), without running it.
  const changedTool = (tool: string) => pinned !== undefined && toolChange(pinned.pinned, pinned.current, tool) !== undefined
  // A tool that was running when the process died: an idempotent one runs again (its next
  // execution); any other one's outcome is unknown: in doubt, never an error the model sees
  // (its `reconcile`, then a person, says what happened). Calls in doubt or deferred stay so.
  const resumed: Part[] = []
  if (state === toolsState) {
    for (const part of assistant.parts) {
      if (part.type !== 'tool' || part.state.status !== 'running') continue
      if (isIdempotent(tools[part.tool]) || changedTool(part.tool)) rerunCall(part, now)
      else doubtCall(part, 'restart')
      resumed.push(part)
    }
  }
  const keep = (part: ToolPart) => state === toolsState && (part.state.status === 'running' || isWaitingCall(part))
  return [...new Set([...resumed, ...closeOpenWork(assistant.parts, { kind: 'restart' }, now, keep), ...stepFinish])]
}
