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
import type { ParkedTurns } from './parked-turns'
import { treeOf } from './resumed-trees'
import type { RunningTurns } from './running-turns'

/**
 * Recovers every claimable unfinished turn: claimed, its crash logged, then resumed in this
 * engine (or ended, per `recovery.policy`). Returns the turns it resumed (or is ending).
 *
 * @example
 * const turns = await recoverTurns({ config, services, turns: deps }, (id) => running.has(id))
 */
export function recoverTurns(
  engine: { config: ResolvedConfig; services: TurnServices; turns: TurnDeps },
  isRunningHere: (turnId: string) => boolean,
  only?: readonly string[],
): Promise<RunningTurn[]> {
  return recoverWith(recoveryPorts(engine), isRunningHere, only)
}

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

type TakingEngine = { config: ResolvedConfig; services: TurnServices; turns: TurnDeps; running: RunningTurns }

/** `resume`'s turn tracked here once its resumption is in its log. */
async function takeTurn(engine: TakingEngine, turnId: string, resume: typeof resumeHeld): Promise<RunningTurn | undefined> {
  const resumed = await resume(recoveryPorts(engine), turnId)
  if (!resumed) return undefined
  engine.running.track(resumed)
  await resumed.recorded()
  return resumed
}

/**
 * Lets go of a turn this engine stopped as stalled: its stall logged as the interruption of its
 * work, its row released for recovery (this engine's or another's) to resume it.
 *
 * @example
 * await letStalledGo({ config, services, turns }, turn.id, turn.fence, stall)
 */
export function letStalledGo(engine: { config: ResolvedConfig; services: TurnServices; turns: TurnDeps }, turnId: string, fence: TurnFence, stall: TurnStall): Promise<void> {
  return letStalledTurnGo(recoveryPorts(engine), turnId, fence, stall)
}

/** Recovery's ports met by this engine. */
function recoveryPorts(engine: { config: ResolvedConfig; services: TurnServices; turns: TurnDeps }): RecoveryPorts<TurnConfig, RunningTurn> {
  const { config, services, turns } = engine
  return {
    store: turns.store,
    owner: turns.owner,
    leaseMs: turns.leaseMs,
    policy: config.recovery.policy,
    publish: (event) => turns.bus.publish(event),
    // The turn's own options, stored with it (its headers, never stored, are not restored).
    turnConfig: async (turnId) => turnConfig(config, services, await turns.store.turns.options(turnId)),
    resume: ({ record, input, fence, config: resumedConfig, messages, from }) => {
      const scope = newScope(turns, record.id, record.sessionId, fence, record.parentTurnId)
      scope.restore(messages, resumedConfig)
      // Run trees: the turn joins its tree (its root, resumed first here, or one loaded from the rows).
      const tree = treeOf(turns, record)
      return from ? resumeTurn(turns, { scope, input, ...from, tree }) : startTurnFromIdle(turns, { scope, input, tree })
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
export async function takeOverTurns(engine: { config: ResolvedConfig; services: TurnServices; turns: TurnDeps; running: RunningTurns }, only?: readonly string[]): Promise<RunningTurn[]> {
  const here = new Set(engine.running.all().map((t) => t.id))
  const recovered = (await recoverTurns(engine, (id) => here.has(id), only)).map((turn) => engine.running.track(turn))
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
 * deadline passed settled (this engine's turns, those just taken over, and parked ones), and the
 * queues that stand still started here (the engine that would have started them died).
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
      if (config.concurrency) void queue.drainFairly()
      else for (const sessionId of await store.queue.idleSessions()) void queue.drain(sessionId)
      return recovered
    },
  }
}
