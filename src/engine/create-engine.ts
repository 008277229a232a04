/**
 * `createEngine`: the composition root. It builds the engine's parts in order, each from the
 * ones before it: options → services → MCP servers and store (and its listening connection on
 * PostgreSQL) → bus → the lifecycle (src/engine/engine-lifecycle.ts: open or closed) → the
 * running turns → what a turn needs (`TurnDeps`) → the prompt queue → parking → recovery →
 * control → the calls; then the lifecycle starts the background work and the recovery at open.
 * No part waits for a later one: the child turn runner makes the recovery and the stored abort a
 * child may need from the turn deps each parent turn runs with. The only module that may import
 * every folder.
 */
import { Bus } from '../core/bus'
import { requireFunction } from '../core/arguments'
import { callHook } from '../core/hooks'
import type { InspectionEvent } from 'xstate'
import { resolveConfig } from '../config/resolve-config'
import type { EngineOptions } from '../config/options'
import type { ResolvedConfig } from '../config/resolved-config'
import { PromptQueue } from '../conversation/prompt-queue'
import { SteerWrites } from '../conversation/steer-writes'
import type { HistoryDeps } from '../conversation/history'
import type { Store } from '../store/store'
import { checkToolSchemas } from '../tools/json-schema-validator'
import { toolFingerprint, type ToolFingerprint } from '../tools/tool-fingerprint'
import { openMcpServers } from '../tools/mcp-servers'
import { newOwnerId } from '../turn/recovery/recover-turns'
import { RunTrees } from '../turn/run-tree/run-trees'
import { EngineChart } from '../turn/turn-actors'
import type { TurnDeps } from '../turn/run-turn'
import { InvalidOptionError } from '../core/errors'
import { uiMessageStreamOfTurn } from '../ui-stream/to-ui-message-stream'
import { childTurns, type ChildHost } from './child-turns'
import { engineControl } from './control-calls'
import { backupCalls } from './backup-call'
import { engineCalls } from './engine-calls'
import type { Engine } from './engine'
import { EngineLifecycle } from './engine-lifecycle'
import { createEngineServices, type EngineServices } from './engine-services'
import { engineCircuits, engineRateLimits, modelHealthCalls } from './model-health'
import { confirmedLiveness } from './gone-sightings'
import { openEngineStore } from './open-store'
import { promptCalls, startQueuedTurn } from './prompt-calls'
import { scheduleCalls, type ScheduleCalls } from './schedule-calls'
import { engineRecovery, letStalledGo, takeOverTurns, takeParkedTurn } from './recovery'
import { ParkedTurns } from './parked-turns'
import { RunningTurns } from './running-turns'
import { sessionCalls } from './session-calls'
import { sessionStatuses } from './session-statuses'
import { StorageWaits } from '../store/outage'
import { engineNotifications, storeFeeds, type StoreFeeds } from './store-feeds'
import { turnLogCalls } from './turn-log-calls'
import { upgradeCalls } from './upgrade-check'
import { waitingCalls } from './waiting-calls'
import { livenessOwner } from '../store/liveness-owner'

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
  return (await assembleEngine(options, { owner: newOwnerId(), leases: true })).engine
}

/**
 * Who runs an engine's turns. turnchart's own engines (`createEngine`): an owner id of their
 * own, leases renewed while a turn runs, the recovery sweep taking over the turns of engines that
 * are gone and starting the queued prompts they left. A host that serializes a session's turns
 * and retries them itself (Restate, `turnchart/restate`): its owner, no lease, no sweep, no prompt
 * started by the queue; the fence alone keeps an older attempt from writing.
 */
export interface EngineHosting {
  owner: string
  leases: boolean
  /** The host runs each child turn as a call of its own (see `ChildHost`); its children park as any turn does. */
  children?: ChildHost
}

/** What a host of turns (`turnchart/restate`) drives beside the engine's calls. */
export interface EngineParts {
  config: ResolvedConfig
  services: EngineServices
  turns: TurnDeps
  running: RunningTurns
  parked: ParkedTurns
  store: Store
}

/**
 * The engine and its parts, hosted as `hosting` says (see `createEngine`).
 *
 * @example
 * const { engine, parts } = await assembleEngine(options, { owner: host.owner, leases: false })
 */
export async function assembleEngine(options: EngineOptions, hosting: EngineHosting): Promise<{ engine: Engine; parts: EngineParts }> {
  // An engine that holds leases marks its owner id as one whose liveness the server keeps, when it does (PostgreSQL).
  const marked = hosting.leases ? livenessOwner(hosting.owner) : undefined
  const resources = await openEngineResources(options, marked)
  const { config, opened, mcp, reportHookError } = resources
  const { store } = opened
  const feeds = opened.notifications && storeFeeds(opened.notifications)
  const bus = new Bus(reportHookError)
  const circuits = engineCircuits(config, store, bus)
  const rateLimits = engineRateLimits(config, store)
  const services: EngineServices = { ...resources.services, ...(circuits ? { circuits } : {}), ...(rateLimits ? { rateLimits } : {}) }
  // The app's listener first: it hears the recovery at open too (a turn resumed waiting asks again).
  if (config.onEvent) bus.subscribe(config.onEvent)
  // OpenTelemetry turn and state spans follow the published transitions (src/telemetry).
  bus.subscribe((event) => services.telemetry.observe(event))
  const statusOf = sessionStatuses(bus)
  const owner = opened.liveness?.owner ?? hosting.owner
  const lifecycle = new EngineLifecycle()
  const { isClosed } = lifecycle
  const storageWaits = new StorageWaits()
  const outage = { ...config.storage, watch: storageWaits }
  const { requireOpen, call } = engineCalls(isClosed, outage)
  const running = new RunningTurns()
  // The steers being stored: the queue tells, a turn waits (at each step gate).
  const steers = new SteerWrites()
  const leaseMs = hosting.leases ? config.leaseMs : null
  // (a host's engine has no sweep: it stores no schedule, and its turns' scheduleTool has none to call)
  const schedules = scheduleCalls({ config, services, store, bus, call, fires: hosting.leases })
  const turns = turnDeps({ config, services, store, bus, owner, leaseMs, running, isClosed, steers, reportHookError, storageWaits, ...(feeds ? { feeds } : {}), ...(hosting.children ? { childHost: hosting.children } : {}), ...(store.schedules && hosting.leases ? { schedules } : {}) })
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
  // Waiting turns let go of after `parkAfterMs`, taken again by whichever engine settles them.
  const parked = new ParkedTurns({ bus, store, running, parkAfterMs: config.parkAfterMs, parksChildren: hosting.children !== undefined, take: (turnId) => takeParkedTurn({ config, services, turns, running }, turnId) })
  // (an engine's death counts once the database said so for a while: gone-sightings.ts)
  const liveness = opened.liveness && confirmedLiveness(opened.liveness)
  const swept = engineRecovery({ config, services, turns, running, parked, queue, requireOpen, ...(liveness ? { liveOwners: (owners: readonly string[]) => liveness.liveOwners(owners) } : {}) })
  // A host that retries its turns itself is their only recovery: no sweep here.
  const recovery = hosting.leases ? swept : { recover: async () => [], sweeps: () => 0 }
  // Approve, deny and abort from any engine (src/control/).
  const control = engineControl({ store, config, running, recover: recovery.recover, requireOpen, ...(feeds ? { feeds } : {}), settleParked: (turnId, apply) => parked.settle(turnId, apply), parkingOf: (turnId) => parked.parking(turnId) })
  running.watch({ busy: (busy) => control.poller.keepAlive(busy), ...(hosting.leases ? { ended: (sessionId: string) => void queue.next(sessionId) } : {}) })
  const history: HistoryDeps = { store, runningHere: (sessionId) => running.ofSession(sessionId)?.id }
  // The streams following turns this engine handed off read on until the database closes.
  const reads = engineCalls(lifecycle.isStoreClosed, outage)
  const readCalls = { ...sessionCalls({ config, store, history, requireOpen: reads.requireOpen, call: reads.call }), ...turnLogCalls({ store, requireOpen: reads.requireOpen, call: reads.call }) }
  const engine: Engine = {
    config,
    notifications: opened.notifications && feeds ? engineNotifications(opened.notifications, feeds.rows) : undefined,
    ...sessionCalls({ config, store, history, requireOpen, call }),
    ...turnLogCalls({ store, requireOpen, call }),
    ...backupCalls({ opened, call }),
    ...upgradeCalls({ config, store, call }),
    ...waitingCalls({ store, call }),
    ...modelHealthCalls({ config, circuits, call }),
    ...control.calls,
    ...promptCalls({ config, services, turns, running, queue, statusOf, requireOpen, call }),
    ...schedules,
    subscribe(listener) {
      requireOpen('subscribe')
      return bus.subscribe(requireFunction('listener', listener))
    },
    recover: recovery.recover,
    stats: () => ({ actors: running.all().length, leases: running.begun().length, timers: parked.timers, sweeps: recovery.sweeps(), storageWaits: storageWaits.now, stalled: running.stalled }),
    close: (closeOptions) => lifecycle.close(closeOptions),
    followHandedOff: () => lifecycle.follow({ getTurn: readCalls.getTurn, messages: readCalls.messages, transitions: readCalls.transitions }),
  }
  await lifecycle.start({
    config,
    store,
    bus,
    owner,
    leases: hosting.leases,
    running,
    queue,
    parked,
    poller: control.poller,
    ...(feeds ? { feeds } : {}),
    recover: recovery.recover,
    takeOver: (ids: string[]) => takeOverTurns({ config, services, turns, running }, ids),
    ...(liveness ? { goneOwners: (except: string) => liveness.goneOwners(except) } : {}),
    letStalledGo: (turnId, fence, stall) => letStalledGo({ config, services, turns, running }, turnId, fence, stall),
    closeResources: async () => {
      await opened.close()
      await mcp?.close()
    },
  })
  return { engine, parts: { config, services, turns, running, parked, store } }
}

/** What the engine opens before its parts: its options resolved, its services, its MCP servers and its database. */
async function openEngineResources(options: EngineOptions, liveness: string | undefined) {
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
    opened = await openEngineStore(options, config, { onError: reportHookError, redact: (text) => services.redactor.text(text) }, liveness)
  } catch (error) {
    await mcp?.close()
    throw error
  }
  if (config.concurrency && !opened.store.slots) {
    await opened.close()
    await mcp?.close()
    throw new InvalidOptionError('concurrency', config.concurrency, 'a database whose store counts running turns (turnchart\'s SQLite, PostgreSQL or MemoryStore; this store has no `slots`)')
  }
  return { config, services, opened, mcp, reportHookError }
}

/** What every turn of the engine runs with (`TurnDeps`). */
function turnDeps(deps: {
  config: ResolvedConfig
  services: EngineServices
  store: Store
  bus: Bus
  owner: string
  leaseMs: number | null
  running: RunningTurns
  isClosed: () => boolean
  steers: SteerWrites
  feeds?: StoreFeeds
  reportHookError: (error: unknown) => void
  storageWaits: StorageWaits
  childHost?: ChildHost
  /** The engine's schedules, lent to the tool calls of its turns (`scheduleTool`). */
  schedules?: Pick<ScheduleCalls, 'schedule'>
}): TurnDeps {
  const { config, services, running, isClosed, steers, reportHookError, feeds, childHost } = deps
  return {
    store: deps.store,
    bus: deps.bus,
    owner: deps.owner,
    leaseMs: deps.leaseMs,
    flushIntervalMs: config.flushIntervalMs,
    outage: { ...config.storage, watch: deps.storageWaits },
    chart: { autoCompact: config.compaction.auto, maxCompactions: config.compaction.maxPerTurn },
    engineChart: new EngineChart(),
    ...(config.inspect ? { inspect: guardedInspector(config.inspect, reportHookError) } : {}),
    ...(config.clock ? { clock: config.clock } : {}),
    onActorError: reportHookError,
    onSettled: (turn) => running.untrack(turn),
    trees: new RunTrees(),
    // Run trees: a tool's child turn aborted on another engine goes through the stored controls.
    children: childTurns({ config, services, running, isClosed, ...(feeds ? { feeds } : {}), ...(childHost ? { childHost } : {}) }),
    steersStored: (sessionId) => steers.stored(sessionId),
    uiMessageStream: uiMessageStreamOfTurn,
    ...(deps.schedules ? { schedule: deps.schedules.schedule } : {}),
  }
}

/**
 * The app's inspector behind a boundary: it sees every inspection event, and a throw (or an
 * async inspector's rejection) is reported (as a subscriber's is), never the turn's failure.
 */
function guardedInspector(inspect: NonNullable<EngineOptions['inspect']>, onError: (error: unknown) => void): (event: InspectionEvent) => void {
  return (event) => callHook(() => (typeof inspect === 'function' ? inspect(event) : inspect.next?.(event)), onError)
}
