/**
 * `createEngine`: the composition root. It builds the engine's parts in order, each from the
 * ones before it: options → services → store (and its listening connection on PostgreSQL) →
 * bus → the running turns → what a turn needs (`TurnDeps`) → the prompt queue → recovery →
 * control → the calls; then the watchers are attached and recovery runs once. No part waits for
 * a later one: the child turn runner makes the recovery and the stored abort a child may need
 * from the turn deps each parent turn runs with. The only module that may import every folder.
 */
import { Bus } from '../core/bus'
import { requireFunction } from '../core/arguments'
import { callHook } from '../core/hooks'
import type { InspectionEvent } from 'xstate'
import { resolveConfig } from '../config/resolve-config'
import type { EngineOptions } from '../config/options'
import { PromptQueue } from '../conversation/prompt-queue'
import { SteerWrites } from '../conversation/steer-writes'
import type { HistoryDeps } from '../conversation/history'
import { checkToolSchemas } from '../tools/json-schema-validator'
import { toolFingerprint, type ToolFingerprint } from '../tools/tool-fingerprint'
import { openMcpServers } from '../tools/mcp-servers'
import { newOwnerId } from '../turn/recovery/recover-turns'
import { RunTrees } from '../turn/run-tree/run-trees'
import { childTurns } from './child-turns'
import type { TurnDeps } from '../turn/run-turn'
import type { RunningTurn } from '../turn/turn-handle'
import { engineControl } from './control-calls'
import { backupCalls } from './backup-call'
import { engineCalls } from './engine-calls'
import type { CloseOptions, Engine, HandedOffReader } from './engine'
import { deferred } from '../core/deferred'
import { InvalidOptionError } from '../core/errors'
import { createEngineServices } from './engine-services'
import { openEngineStore } from './open-store'
import { promptCalls, startQueuedTurn } from './prompt-calls'
import { takeOverTurns, takeParkedTurn } from './recovery'
import { ParkedTurns } from './parked-turns'
import { deadlineTimer, sweepDeadlines } from './deadline-sweep'
import { renewLeases, RunningTurns } from './running-turns'
import { sessionCalls } from './session-calls'
import { sessionStatuses } from './session-statuses'
import { engineNotifications, storeFeeds } from './store-feeds'
import { turnLogCalls } from './turn-log-calls'
import { upgradeCalls } from './upgrade-check'
import { uiMessageStreamOfTurn } from '../ui-stream/to-ui-message-stream'

/**
 * Creates an engine. Invalid options fail here with an `InvalidOptionError` naming the option.
 *
 * @example
 * import { createEngine } from 'turnchart'
 * const engine = await createEngine({ database: './agent.db', model, limits: { context: 128000, output: 8192 } })
 * const session = await engine.createSession()
 * const turn = engine.prompt(session.id, 'hi')
 * console.log(await turn.done) // { outcome: 'completed', ... }
 */
export async function createEngine(options: EngineOptions): Promise<Engine> {
  const resolved = resolveConfig(options)
  // The app's reporter of hook errors, itself behind a boundary (it is the app's code too: a
  // throw, or an async reporter's rejection, goes nowhere rather than to the process).
  const reportHookError = (error: unknown) => callHook(() => resolved.onSubscriberError(error), () => undefined)
  // MCP servers' tools join the app's (their transports' headers and env values are secrets to the redactor).
  const mcp = options.mcp ? await openMcpServers(options.mcp, Object.keys(resolved.tools)) : undefined
  const services = createEngineServices(resolved, [...(options.redact?.secrets ?? []), ...(mcp?.secrets ?? [])], reportHookError)
  const tools = mcp ? { ...resolved.tools, ...mcp.tools } : resolved.tools
  let opened: Awaited<ReturnType<typeof openEngineStore>>
  let config: typeof resolved & { toolFingerprint: ToolFingerprint }
  try {
    await checkToolSchemas(tools)
    // Each turn stores the fingerprint of the tools it may call (names and schema digests).
    config = { ...resolved, tools, toolFingerprint: await toolFingerprint(tools) }
    // The listening connection's failures end nothing (the engine polls meanwhile): told where
    // subscribers' failures are.
    opened = await openEngineStore(options, config, { onError: reportHookError, redact: (text) => services.redactor.text(text) })
  } catch (error) {
    await mcp?.close()
    throw error
  }
  if (config.concurrency && !opened.store.slots) {
    await opened.close()
    await mcp?.close()
    throw new InvalidOptionError('concurrency', config.concurrency, 'a database whose store counts running turns (turnchart\'s SQLite, PostgreSQL or MemoryStore; this store has no `slots`)')
  }
  const { store } = opened
  const feeds = opened.notifications && storeFeeds(opened.notifications)
  const bus = new Bus(reportHookError)
  // OpenTelemetry turn and state spans follow the published transitions (src/telemetry).
  bus.subscribe((event) => services.telemetry.observe(event))
  const statusOf = sessionStatuses(bus)
  const owner = newOwnerId()

  let closed = false
  const isClosed = () => closed
  const { requireOpen, call } = engineCalls(isClosed)

  const running = new RunningTurns()
  // The steers being stored: the queue tells, a turn waits (at each step gate).
  const steers = new SteerWrites()
  const turns: TurnDeps = {
    store,
    bus,
    owner,
    leaseMs: config.leaseMs,
    flushIntervalMs: config.flushIntervalMs,
    chart: { autoCompact: config.compaction.auto, maxCompactions: config.compaction.maxPerTurn },
    ...(config.inspect ? { inspect: guardedInspector(config.inspect, reportHookError) } : {}),
    ...(config.clock ? { clock: config.clock } : {}),
    onActorError: reportHookError,
    onSettled: (turn) => running.untrack(turn),
    trees: new RunTrees(),
    // Run trees: a tool's child turn aborted on another engine goes through the stored controls.
    children: childTurns({ config, services, running, isClosed, ...(feeds ? { feeds } : {}) }),
    steersStored: (sessionId) => steers.stored(sessionId),
    uiMessageStream: uiMessageStreamOfTurn,
  }
  const queue = new PromptQueue({
    store,
    bus,
    config,
    isClosed,
    activeTurn: (sessionId) => running.ofSession(sessionId),
    start: (record, memory) => running.track(startQueuedTurn({ config, services, turns }, record, memory)),
    ...(feeds ? { changes: feeds.sessions } : {}),
    steers,
  })

  let sweeps = 0
  /** Takes over the turns left by engines that are gone; resolves once each resumption is logged. */
  const recover = async (): Promise<RunningTurn[]> => {
    requireOpen('recover turns')
    sweeps++
    const recovered = await takeOverTurns({ config, services, turns, running })
    // Waits whose stored deadline passed (this engine's turns, those just taken over included, and parked ones).
    await sweepDeadlines({ store, running, parked }, Date.now())
    // Queues that stand still (the engine that would have started them died): start them here.
    if (config.concurrency) void queue.drainFairly()
    else for (const sessionId of await store.queue.idleSessions()) void queue.drain(sessionId)
    return recovered
  }
  // A turn another engine released (its handoff, its close): recovered at once, not at the next sweep.
  // (an engine that takes over no turns while it runs, `recovery.intervalMs: 0`, takes none of these either)
  const stopTakingReleased =
    feeds && config.recovery.intervalMs > 0 ? takeReleasedTurns(feeds.released, (ids) => (closed ? Promise.resolve() : takeOverTurns({ config, services, turns, running }, ids))) : () => undefined
  // Waiting turns let go of after `parkAfterMs`, taken again by whichever engine settles them.
  const parked = new ParkedTurns({ bus, store, running, parkAfterMs: config.parkAfterMs, take: (turnId) => takeParkedTurn({ config, services, turns, running }, turnId) })
  // Approve, deny and abort from any engine (src/control/).
  const control = engineControl({ store, config, running, recover, requireOpen, ...(feeds ? { feeds } : {}), settleParked: (turnId, apply) => parked.settle(turnId, apply), parkingOf: (turnId) => parked.parking(turnId) })
  running.watch({ busy: (busy) => control.poller.keepAlive(busy), ended: (sessionId) => void queue.next(sessionId) })
  const stopRenewal = renewLeases(store.turns, running, owner, config.leaseMs)
  // At a waiting call's deadline: the sweep (src/engine/deadline-sweep.ts).
  const stopDeadlineTimer = deadlineTimer(
    (listener) => bus.subscribe(listener),
    () => void (closed ? undefined : recover().catch(() => undefined)),
  )
  const history: HistoryDeps = { store, runningHere: (sessionId) => running.ofSession(sessionId)?.id }

  // The streams following turns this engine handed off: the database stays open for them (close waits).
  let storeClosed = false
  const reads = engineCalls(() => storeClosed)
  const readCalls = { ...sessionCalls({ config, store, history, requireOpen: reads.requireOpen, call: reads.call }), ...turnLogCalls({ store, requireOpen: reads.requireOpen, call: reads.call }) }
  let followers = 0
  let unfollowed = deferred<void>()
  const followHandedOff = (): HandedOffReader | undefined => {
    if (storeClosed) return undefined
    if (followers++ === 0) unfollowed = deferred<void>()
    let released = false
    return {
      getTurn: readCalls.getTurn,
      messages: readCalls.messages,
      transitions: readCalls.transitions,
      release() {
        if (released) return
        released = true
        if (--followers === 0) unfollowed.resolve()
      },
    }
  }

  let sweep: NodeJS.Timeout | undefined
  const stopBackground = () => {
    stopTakingReleased()
    parked.close()
    stopRenewal()
    stopDeadlineTimer()
    clearInterval(sweep)
    control.poller.stop()
  }
  const engine: Engine = {
    config,
    notifications: opened.notifications && feeds ? engineNotifications(opened.notifications, feeds.rows) : undefined,
    ...sessionCalls({ config, store, history, requireOpen, call }),
    ...turnLogCalls({ store, requireOpen, call }),
    ...backupCalls({ opened, call }),
    ...upgradeCalls({ config, store, call }),
    ...control.calls,
    ...promptCalls({ config, services, turns, running, queue, statusOf, requireOpen, call }),
    subscribe(listener) {
      requireOpen('subscribe')
      return bus.subscribe(requireFunction('listener', listener))
    },
    recover,
    stats: () => ({ actors: running.all().length, leases: running.begun().length, timers: parked.timers, sweeps }),
    async close(closeOptions = {}) {
      const handoffMs = checkCloseOptions(closeOptions)
      if (closed) return
      closed = true
      if (handoffMs !== null) {
        // No new work (prompts refused, no recovery, the queue stopped); leases and control go on
        // while the turns reach their gates, each released (and, on PostgreSQL, announced) as it does.
        stopTakingReleased()
        clearInterval(sweep)
        queue.close()
        await Promise.all(
          running.all().map(async (turn) => {
            await turn.handoff(handoffMs)
            await store.turns.release(owner, [turn.id]).catch(() => undefined)
          }),
        )
        stopBackground()
        // Streams of the handed-off turns follow them through the new owners' rows: until they end.
        if (followers > 0) await unfollowed.promise
      } else {
        // A turn waiting on a person or the world is parked (held by no engine, taken by whichever
        // settles it), unless every turn is aborted; the others stop where they are and are released.
        if (closeOptions.abortTurns !== true) await parked.parkAll()
        stopBackground()
        queue.close()
        await endTurnsAtClose(running.all(), closeOptions.abortTurns === true)
      }
      await store.turns.release(owner).catch(() => undefined)
      storeClosed = true
      await opened.close()
      await mcp?.close()
    },
    followHandedOff,
  }
  if (config.recovery.intervalMs > 0) {
    // Takes over the turns of workers that die while this engine runs, then settles the waits past their deadline.
    sweep = setInterval(() => {
      if (!closed) recover().catch(() => undefined)
    }, config.recovery.intervalMs)
    sweep.unref()
  }
  if (config.recovery.onOpen) {
    await recover().catch(async (error: unknown) => {
      stopBackground()
      await opened.close()
      await mcp?.close()
      throw error
    })
  }
  return engine
}

/**
 * The app's inspector behind a boundary: it sees every inspection event, and a throw (or an
 * async inspector's rejection) is reported (as a subscriber's is), never the turn's failure.
 */
function guardedInspector(inspect: NonNullable<EngineOptions['inspect']>, onError: (error: unknown) => void): (event: InspectionEvent) => void {
  return (event) => callHook(() => (typeof inspect === 'function' ? inspect(event) : inspect.next?.(event)), onError)
}

/** The default of `close({ handoffTimeoutMs })`: under the 30 s a container is usually given to stop. */
const defaultHandoffTimeoutMs = 20_000

/** `close`'s options checked: the handoff's bound (ms), or null when the turns are not handed off. */
function checkCloseOptions(options: CloseOptions): number | null {
  if (typeof options !== 'object' || options === null) throw new InvalidOptionError('close options', options, 'an object like { handoff: true } or { abortTurns: true }')
  if (options.handoff && options.abortTurns) {
    throw new InvalidOptionError('handoff', options.handoff, 'handoff or abortTurns, not both (a handed-off turn goes on in another engine; an aborted one ends here)')
  }
  const timeout = options.handoffTimeoutMs
  if (timeout !== undefined && (typeof timeout !== 'number' || !Number.isFinite(timeout) || timeout < 0)) {
    throw new InvalidOptionError('handoffTimeoutMs', timeout, 'a number of milliseconds, 0 or more')
  }
  return options.handoff ? (timeout ?? defaultHandoffTimeoutMs) : null
}

/**
 * Takes over each turn another engine releases, as soon as it is told: the releases heard in
 * one read of the listening connection (a handoff releases many turns at once) go together,
 * at once, without waiting for a takeover still running (that one waits on its own turns'
 * writes); a turn being taken is not taken twice. Missed notifications (a reconnect) are left
 * to the recovery sweep. Returns the stop.
 */
function takeReleasedTurns(feed: { subscribe(listener: (turnId?: string) => void): () => void }, takeOver: (ids: string[]) => Promise<unknown>): () => void {
  const heard = new Set<string>()
  const taking = new Set<string>()
  let scheduled = false
  const take = () => {
    scheduled = false
    const ids = [...heard].filter((id) => !taking.has(id))
    heard.clear()
    if (ids.length === 0) return
    for (const id of ids) taking.add(id)
    void takeOver(ids)
      .catch(() => undefined)
      .finally(() => {
        for (const id of ids) taking.delete(id)
      })
  }
  return feed.subscribe((turnId) => {
    if (!turnId) return
    heard.add(turnId)
    if (scheduled) return
    scheduled = true
    // After the other notifications of this read: one takeover for all of them.
    setImmediate(take)
  })
}

/**
 * The engine's turns at close: aborted (`abortTurns`), or detached, each staying in the state
 * its last committed row names (awaiting-approval included) for the next engine to resume.
 */
async function endTurnsAtClose(turns: RunningTurn[], abort: boolean): Promise<void> {
  if (abort) {
    for (const turn of turns) turn.abort('engine closed')
    await Promise.all(turns.map((turn) => turn.done.catch(() => undefined)))
  } else {
    await Promise.all(turns.map((turn) => turn.detach()))
  }
}
