/**
 * The engine's recovery: the ports recovery (src/turn/recovery) runs through, met by this
 * engine: its store, its owner id, the stored options of each turn resolved against its
 * registries, and the runner a recovered turn runs again in; and the sweep `engine.recover()`
 * runs (on open, at the recovery interval, at the nearest stored deadline).
 */
import type { ResolvedConfig } from '../config/resolved-config'
import { turnConfig } from '../conversation/resolve-turn-options'
import { letStalledTurnGo, recoverWith, resumeHeld, resumeParked, type RecoveryPorts } from '../turn/recovery/recover-turns'
import type { TurnDeps } from '../turn/run-turn'
import type { TurnConfig, TurnServices } from '../turn/turn-config'
import type { RunningTurn } from '../turn/turn-handle'
import type { TurnFence } from '../store/store'
import type { TurnStall } from '../../machines/turn.types'
import { newScope, resumeTurn, startTurnFromIdle } from '../turn/turn-starts'
import type { PromptQueue } from '../conversation/prompt-queue'
import { sweepDeadlines } from './deadline-sweep'
import { fireSchedules } from '../schedule/fire-schedules'
import type { ParkedTurns } from './parked-turns'
import { treeOf } from './resumed-trees'
import type { RunningTurns } from './running-turns'

/**
 * Takes a parked turn into this engine and tracks it here; resolves with it once its resumption
 * is in its log, or undefined when it is not parked (any more) or another engine took it.
 *
 * @example
 * const turn = await takeParkedTurn({ config, services, turns, running }, turnId)
 */
export function takeParkedTurn(engine: TakingEngine, turnId: string): Promise<RunningTurn | undefined> {
  return takeTurn(engine, turnId, resumeParked)
}

/**
 * Takes an unfinished turn into this engine from whoever holds it (Restate's next attempt of the
 * invocation that runs it) and tracks it here; resolves with it once its resumption is in its
 * log, or undefined when it ended or another claim came first.
 *
 * @example
 * const turn = await takeHeldTurn({ config, services, turns, running }, turnId)
 */
export function takeHeldTurn(engine: TakingEngine, turnId: string): Promise<RunningTurn | undefined> {
  return takeTurn(engine, turnId, resumeHeld)
}

type TakingEngine = {
  config: ResolvedConfig
  services: TurnServices
  turns: TurnDeps
  running: RunningTurns
  /** Which engines (owner ids) the database says are alive (PostgreSQL's liveness): their turns wait for no lease when they are not. */
  liveOwners?: RecoveryPorts<TurnConfig, unknown>['liveOwners']
}

/** `resume`'s turn (tracked here as it resumed), once its resumption is in its log. */
async function takeTurn(engine: TakingEngine, turnId: string, resume: typeof resumeHeld): Promise<RunningTurn | undefined> {
  const resumed = await resume(recoveryPorts(engine), turnId)
  await resumed?.recorded()
  return resumed
}

/**
 * Lets go of a turn this engine stopped as stalled: its stall logged as the interruption of its
 * work, its row released for recovery (this engine's or another's) to resume it.
 *
 * @example
 * await letStalledGo({ config, services, turns, running }, turn.id, turn.fence, stall)
 */
export function letStalledGo(engine: TakingEngine, turnId: string, fence: TurnFence, stall: TurnStall): Promise<void> {
  return letStalledTurnGo(recoveryPorts(engine), turnId, fence, stall)
}

/**
 * Recovery's ports met by this engine. A resumed turn is tracked here as it resumes (its lease
 * renewed from then on), not once the whole pass is done: a pass that takes longer than a lease
 * must not let the turn's lease run out while it runs here, for another pass to take it again.
 * And an engine runs one life of a turn at a time: a turn found running here when it would
 * resume (another pass of this engine took it first) is not run again (its stale claim fences
 * that life out at its next write; recovery takes the turn then).
 */
function recoveryPorts(engine: TakingEngine): RecoveryPorts<TurnConfig, RunningTurn | undefined> {
  const { config, services, turns, running } = engine
  return {
    store: turns.store,
    owner: turns.owner,
    leaseMs: turns.leaseMs,
    policy: config.recovery.policy,
    ...(engine.liveOwners ? { liveOwners: engine.liveOwners } : {}),
    publish: (event) => turns.bus.publish(event),
    // The turn's own options, stored with it (its headers, never stored, are not restored).
    turnConfig: async (turnId) => turnConfig(config, services, await turns.store.turns.options(turnId)),
    resume: ({ record, input, fence, config: resumedConfig, messages, from }) => {
      if (running.find(record.id)) return undefined
      const scope = newScope(turns, record.id, record.sessionId, fence, record.parentTurnId)
      scope.restore(messages, resumedConfig)
      // Run trees: the turn joins its tree (its root, resumed first here, or one loaded from the rows).
      const tree = treeOf(turns, record)
      return running.track(from ? resumeTurn(turns, { scope, input, ...from, tree }) : startTurnFromIdle(turns, { scope, input, tree }))
    },
  }
}

/**
 * Takes over the turns left by engines that are gone (or only those of `only`: turns another
 * engine released) and tracks them here; resolves with them once each one's resumption is in
 * its log (its row shows the state it resumed in).
 *
 * @example
 * const resumed = await takeOverTurns({ config, services, turns, running })
 */
export async function takeOverTurns(engine: TakingEngine, only?: readonly string[]): Promise<RunningTurn[]> {
  const recovered = (await recoverWith(recoveryPorts(engine), engine.running, only)).filter((turn) => turn !== undefined)
  await Promise.all(recovered.map((turn) => turn.recorded()))
  return recovered
}

/** `engine.recover()`, and how many sweeps it ran (`engine.stats().sweeps`). */
export interface EngineRecovery {
  recover(): Promise<RunningTurn[]>
  sweeps(): number
}

/**
 * The engine's one sweep: the turns of engines that are gone taken over, the waits whose stored
 * deadline passed settled (this engine's turns, those just taken over, and parked ones), the
 * schedules due fired (their turns queued), and the queues that stand still started here (the
 * engine that would have started them died).
 *
 * @example
 * const { recover } = engineRecovery({ config, services, turns, running, parked, queue, requireOpen })
 */
export function engineRecovery(engine: {
  config: ResolvedConfig
  services: TurnServices
  turns: TurnDeps
  running: RunningTurns
  parked: Pick<ParkedTurns, 'settle'>
  queue: Pick<PromptQueue, 'drain' | 'drainFairly'>
  requireOpen(operation: string): void
  liveOwners?: TakingEngine['liveOwners']
}): EngineRecovery {
  const { config, running, parked, queue } = engine
  const store = engine.turns.store
  let sweeps = 0
  return {
    sweeps: () => sweeps,
    async recover() {
      engine.requireOpen('recover turns')
      sweeps++
      const recovered = await takeOverTurns(engine)
      await sweepDeadlines({ store, running, parked }, Date.now())
      // The schedules due: each occurrence's turn queued (by one engine), started below.
      await fireSchedules({ store, bus: engine.turns.bus }, Date.now())
      if (config.concurrency) void queue.drainFairly()
      else for (const sessionId of await store.queue.idleSessions()) void queue.drain(sessionId)
      return recovered
    },
  }
}
