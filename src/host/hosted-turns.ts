/**
 * `HostedTurns`: an engine run by a host of turns (`TurnHost`: Restate, a queue, a serverless
 * platform), and what the host asks of it. The host runs a session's turns one at a time and runs
 * a turn again when its run died; the engine gives it the turn's runs and the calls that settle a
 * pause. A turn runs in the engine as any turn does (the same chart, actors, policies and store)
 * until it ends, waits, or waits on child turns; a waiting turn is parked at once (`parkAfterMs:
 * 0`: no process holds it while the host waits for its control or its deadline), and the next run
 * takes it from whoever holds it, its fence bumped: an older run still alive cannot write.
 */
import { waitOf } from '../../machines/turn.machine'
import { applyPending } from '../control/control-poller'
import { readStatus } from '../control/read-status'
import { storeAbort, storeDecision, type Decision } from '../control/remote-control'
import { openTurnsBelow } from '../control/stored-turns'
import { InvalidOptionError, QueuedPromptCancelledError, SessionNotFoundError, TurnNotFoundError, TurnParkedError, serializeError } from '../core/errors'
import { newId } from '../core/ids'
import { parkedOwner } from '../core/parking'
import type { TurnRecord } from '../core/types'
import type { EngineOptions } from '../config/options'
import { turnRequest } from '../conversation/turn-options'
import { userParts, type PromptInput } from '../conversation/user-input'
import { approveDecision, denyArguments, remoteControl } from '../engine/control-calls'
import { assembleEngine, type EngineParts } from '../engine/create-engine'
import type { Engine } from '../engine/engine'
import { startQueuedTurn } from '../engine/prompt-calls'
import { takeHeldTurn } from '../engine/recovery'
import { finalTextOf } from '../turn/turn-result'
import type { RunningTurn } from '../turn/turn-handle'
import { startTurn } from '../turn/turn-starts'
import { checkResolution } from '../tools/resolve-call'
import { storeQueued } from '../conversation/prompt-queue'
import { ChildWaits } from './child-waits'
import type { HostedPrompt, HostedSessionStatus, HostedTurnResult, HostedTurnStatus, TurnHost, TurnPause } from './turn-host'

/**
 * The turns a host runs in this process, and the calls that settle their pauses (`TurnHost` says
 * what the host does with them).
 *
 * @example
 * const turns = await HostedTurns.open({ database: './agent.db', model, tools }, { owner: 'my-queue' })
 * const turnId = await turns.newTurn('ses_1', { input: 'hello' })
 * const pause = await turns.runUntilPause('ses_1', turnId, { input: 'hello' }) // { kind: 'ended', result }
 */
export class HostedTurns {
  readonly engine: Engine
  readonly #parts: EngineParts
  readonly #children: ChildWaits
  readonly #host: TurnHost

  private constructor(engine: Engine, parts: EngineParts, children: ChildWaits, host: TurnHost) {
    this.engine = engine
    this.#parts = parts
    this.#children = children
    this.#host = host
  }

  /** Opens the engine that runs this process's turns for `host`: `options` as `createEngine` takes them. */
  static async open(options: EngineOptions, host: TurnHost): Promise<HostedTurns> {
    const owner = host?.owner
    if (typeof owner !== 'string' || owner === '' || owner === parkedOwner || /^[^:]*:\d+:/.test(owner)) {
      throw new InvalidOptionError('host.owner', owner, "the host's own id, e.g. 'my-queue' (not an engine's 'host:pid:id', nor 'turnchart:parked')")
    }
    const hosted: EngineOptions = { ...options, parkAfterMs: 0, recovery: { ...options.recovery, onOpen: false, intervalMs: 0 } }
    const children = new ChildWaits()
    const { engine, parts } = await assembleEngine(hosted, { owner: host.owner, leases: false, children })
    return new HostedTurns(engine, parts, children, host)
  }

  /**
   * A new turn's id for `prompt` in `sessionId`, the session made with that id when the store does
   * not hold it yet. The prompt is checked first (its input and options, as the turn's start
   * checks them): a refused one stores nothing, not even its session.
   */
  async newTurn(sessionId: string, prompt: HostedPrompt): Promise<string> {
    if ('input' in prompt) {
      const { config, services } = this.#parts
      userParts(prompt.input, config.maxFileBytes)
      turnRequest(config, services, sessionId, prompt.options)
    }
    if (!(await this.engine.getSession(sessionId))) await this.engine.createSession({ id: sessionId })
    return newId('trn')
  }

  /**
   * Runs the turn `turnId` of `sessionId` until it ends, waits parked, or waits on child turns
   * (an `agentTool` call's, for the invocation to call): started from `prompt` when it has no row
   * yet, awaited when it runs here, otherwise taken from whoever holds it (the attempt before,
   * which died; a parked turn, whose pending controls are applied first).
   */
  async runUntilPause(sessionId: string, turnId: string, prompt: HostedPrompt): Promise<TurnPause> {
    const turn = this.#parts.running.find(turnId) ?? (await this.#startOrTake(sessionId, turnId, prompt))
    if (!turn) return { kind: 'ended', result: await this.#storedResult(turnId) }
    const children = this.#children.next(turnId)
    try {
      return await Promise.race([this.#endOf(turn), children.children.then((calls): TurnPause => ({ kind: 'children', children: calls }))])
    } finally {
      children.stop()
    }
  }

  /** Where the running turn stops here: its end, or its wait, parked. */
  async #endOf(turn: RunningTurn): Promise<TurnPause> {
    try {
      const done = await turn.done
      this.#children.forget(turn.id)
      return { kind: 'ended', result: { turnId: turn.id, outcome: done.outcome, text: done.text, ...(done.error ? { error: serializeError(done.error) } : {}) } }
    } catch (error) {
      if (!TurnParkedError.isInstance(error)) throw error
      const deadline = (await this.#parts.store.turns.get(turn.id))?.retryAt ?? undefined
      return { kind: 'waiting', state: error.state, ...(deadline !== undefined ? { deadline } : {}) }
    }
  }

  /** True when a control is stored for the turn and not yet applied (it came before its wait was announced). */
  async hasPendingControl(turnId: string): Promise<boolean> {
    return (await this.#parts.store.controls.pending([turnId])).length > 0
  }

  /**
   * Approves a call waiting for approval in the session's turn (`turnId`, or its open turn): the
   * decision stored for the turn's next run to apply. Throws `ApprovalNotPendingError` when the
   * call does not wait for one.
   */
  approve(sessionId: string, request: { turnId?: string; callId: string; input?: unknown; by?: string }): Promise<void> {
    return this.#decide(sessionId, request, () => approveDecision(optionsOf(request, ['input', 'by'])))
  }

  /** Denies a call waiting for approval (a `reason` the model sees); as `approve`. */
  deny(sessionId: string, request: { turnId?: string; callId: string; reason?: string; by?: string }): Promise<void> {
    return this.#decide(sessionId, request, () => ({ kind: 'deny', ...present(denyArguments(optionsOf(request, ['reason', 'by']))) }))
  }

  /** Settles a call in doubt or deferred with its `resolution`; throws `CallNotWaitingError` when the call does not wait for one. */
  resolveCall(sessionId: string, request: { turnId?: string; callId: string; resolution: unknown }): Promise<void> {
    return this.#decide(sessionId, request, () => ({ kind: 'resolve', resolution: checkResolution(request?.resolution) }))
  }

  async #decide(sessionId: string, request: { turnId?: string; callId: string }, decision: () => Decision): Promise<void> {
    const id = request?.turnId ?? (await this.#openTurn(sessionId))?.id ?? 'none'
    const remote = remoteControl({ store: this.#parts.store, config: this.#parts.config, running: this.#parts.running, recover: async () => [] })
    await storeDecision(remote, newId('ctl'), id, request?.callId, decision())
  }

  /**
   * Stores a steer for the session (the running turn takes it at its next model call, from any
   * process); resolves with its id and whether a turn was open after it was stored (if not, no
   * turn will take it: it is started as a turn of its own).
   */
  async steer(sessionId: string, input: PromptInput): Promise<{ id: string; open: boolean }> {
    const parts = userParts(input, this.#parts.config.maxFileBytes) // (refused before anything is written)
    const id = newId('trn')
    const open = await storeQueued(this.#parts.store, { id, sessionId, input: parts, options: {}, time: { created: Date.now() }, kind: 'steer' })
    return { id, open: open !== undefined }
  }

  /** The ids of the session's steers no turn took (its turn ended before another model call): each becomes a turn of its own. */
  async steersLeft(sessionId: string): Promise<string[]> {
    return (await this.#parts.store.queue.list(sessionId)).map((record) => record.id)
  }

  /**
   * Aborts the session's open turn: at once when it runs here, else by a stored request (its
   * runner applies it; a parked one's next attempt does). Resolves with the sessions of the open
   * turns below it in its run tree, whose objects are told too (their invocations may wait parked).
   */
  async abort(sessionId: string, reason: string): Promise<string[]> {
    const open = await this.#openTurn(sessionId)
    const below = open ? await openTurnsBelow(this.#parts.store, open.id) : []
    const here = this.#parts.running.ofSession(sessionId)
    if (here) here.abort(reason)
    else if (open) await storeAbort(this.#parts.store, open.id, reason)
    return below.map((turn) => turn.sessionId)
  }

  /** The session's status, from the store (as `engine.readStatus` reads it), with the open turns below its turn. */
  async status(sessionId: string): Promise<HostedSessionStatus> {
    const status = await readStatus(this.#parts.store, sessionId)
    if (status.type === 'idle') return status
    const children = (await openTurnsBelow(this.#parts.store, status.turnId)).map(turnStatus)
    return { ...status, ...(children.length > 0 ? { children } : {}) }
  }

  close(): Promise<void> {
    return this.engine.close()
  }

  async #startOrTake(sessionId: string, turnId: string, prompt: HostedPrompt): Promise<RunningTurn | undefined> {
    const { config, services, turns, running, store, parked } = this.#parts
    const row = await store.turns.get(turnId)
    if (!row && 'queued' in prompt) {
      // A steer no turn took: started from its queue row, taken in the turn's insert (once).
      const record = await store.queue.get(prompt.queued)
      if (!record) throw new QueuedPromptCancelledError(sessionId, prompt.queued)
      return running.track(startQueuedTurn({ config, services, turns }, record, {}))
    }
    if (!row && 'input' in prompt) {
      const request = turnRequest(config, services, sessionId, prompt.options)
      return running.track(startTurn(turns, sessionId, userParts(prompt.input, config.maxFileBytes), { ...request, turnId }))
    }
    if (!row && 'turn' in prompt) throw new TurnNotFoundError(prompt.turn)
    if (!row || row.outcome) return undefined
    if (row.owner === parkedOwner) {
      // Taken, its pending controls applied and its waits past their deadline settled (parked
      // again at once if it still waits).
      await parked.settle(turnId, async (turn) => {
        await applyPending(store.controls, turn)
        if (row.retryAt !== null && row.retryAt !== undefined && row.retryAt <= Date.now()) await turn.expire(Date.now())
      })
      return running.find(turnId) ?? (await this.#stillOpen(turnId))
    }
    return (await takeHeldTurn(this.#parts, turnId)) ?? (await this.#stillOpen(turnId))
  }

  /** A turn another claim took first: an error for the host to run it again (the next run takes it), unless it ended. */
  async #stillOpen(turnId: string): Promise<undefined> {
    const row = await this.#parts.store.turns.get(turnId)
    if (row && !row.outcome && row.owner === parkedOwner) throw new Error(`turn ${turnId} is parked again: run it once more`)
    if (row && !row.outcome && row.owner !== this.#host.owner) throw new Error(`turn ${turnId} is held by ${row.owner ?? 'nobody'}: run it once more`)
    return undefined
  }

  async #storedResult(turnId: string): Promise<HostedTurnResult> {
    const { store } = this.#parts
    const row = await store.turns.get(turnId)
    if (!row) throw new SessionNotFoundError(turnId)
    const messages = (await store.messages.list(row.sessionId)).filter((m) => m.info.turnId === turnId)
    const outcome = row.outcome === 'completed' || row.outcome === 'aborted' ? row.outcome : 'failed'
    return { turnId, outcome, text: finalTextOf(messages), ...(row.error ? { error: row.error } : {}) }
  }

  async #openTurn(sessionId: string) {
    return this.#parts.store.turns.openOfSession(sessionId)
  }
}

function turnStatus(turn: TurnRecord): HostedTurnStatus {
  const awaits = waitOf(turn.state)?.awaits
  return { sessionId: turn.sessionId, turnId: turn.id, state: turn.state, ...(awaits ? { awaits } : {}) }
}

/** A control's own options: the request without the call it names. */
function optionsOf(request: Record<string, unknown>, keys: string[]): Record<string, unknown> {
  return Object.fromEntries(keys.filter((key) => request?.[key] !== undefined).map((key) => [key, request[key]]))
}

/** The fields of `value` that are set. */
function present<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>
}
