/**
 * The engine's recovery: the ports recovery (src/turn/recovery) runs through, met by this
 * engine: its store, its owner id, the stored options of each turn resolved against its
 * registries, and the runner a recovered turn runs again in.
 */
import type { ResolvedConfig } from '../config/resolved-config'
import { turnConfig } from '../conversation/resolve-turn-options'
import { recoverWith, type RecoveryPorts } from '../turn/recovery/recover-turns'
import type { TurnDeps } from '../turn/run-turn'
import type { TurnConfig, TurnServices } from '../turn/turn-config'
import type { RunningTurn } from '../turn/turn-handle'
import { newScope, resumeTurn, startTurnFromIdle } from '../turn/turn-starts'
import { treeOf } from './resumed-trees'
import { toolChanges, waitingCalls } from './upgrade-check'
import { toolFingerprint, type ToolFingerprint } from '../tools/tool-fingerprint'
import type { MessageWithParts, StoredTurnOptions, TurnRecord } from '../core/types'
import type { RunningTurns } from './running-turns'

/**
 * Recovers every claimable unfinished turn: claimed, its crash logged, then resumed in this
 * engine (or ended, per `recovery.policy`). Returns the turns it resumed (or is ending).
 *
 * @example
 * const turns = await recoverTurns({ config, services, turns: deps }, (id) => running.has(id))
 */
export async function recoverTurns(
  engine: { config: ResolvedConfig; services: TurnServices; turns: TurnDeps },
  isRunningHere: (turnId: string) => boolean,
): Promise<RunningTurn[]> {
  const { config, services, turns } = engine
  // What each turn's stored fingerprint is held against: a call waiting for a tool an upgrade removed or changed is refused.
  const current = await toolFingerprint(config.tools)
  const ports: RecoveryPorts<TurnConfig, RunningTurn> = {
    store: turns.store,
    owner: turns.owner,
    leaseMs: config.leaseMs,
    policy: config.recovery.policy,
    publish: (event) => turns.bus.publish(event),
    // The turn's own options, stored with it (its headers, never stored, are not restored).
    // A tool an upgrade removed is left out (its waiting calls are refused below), not a failure of the turn.
    turnConfig: async (turnId) => turnConfig(config, services, registeredTools(await turns.store.turns.options(turnId), config)),
    resume: ({ record, input, fence, config: resumedConfig, messages, from }) => {
      const scope = newScope(turns, record.id, record.sessionId, fence, record.parentTurnId)
      scope.restore(messages, resumedConfig)
      // Run trees: the turn joins its tree (its root, resumed first here, or one loaded from the rows).
      const tree = treeOf(turns, record)
      const turn = from ? resumeTurn(turns, { scope, input, ...from, tree }) : startTurnFromIdle(turns, { scope, input, tree })
      refuseChangedCalls(turn, record, messages, current)
      return turn
    },
  }
  return recoverWith(ports, isRunningHere)
}

/** Stored options with only the tools still registered (an upgrade may have removed some). */
function registeredTools(stored: StoredTurnOptions | null, config: ResolvedConfig): StoredTurnOptions | null {
  if (!stored?.tools) return stored
  return { ...stored, tools: stored.tools.filter((name) => Object.hasOwn(config.tools, name)) }
}

/**
 * A resumed turn waiting for a person on calls of tools an upgrade removed or changed: each
 * such call is refused (an error part naming the tool and the change, which the model sees),
 * so the turn goes on with the rest instead of running an unknown tool or one with new input.
 */
function refuseChangedCalls(turn: RunningTurn, record: TurnRecord, messages: MessageWithParts[], current: ToolFingerprint): void {
  const changes = new Map(toolChanges(record.options, current).map((c) => [c.tool, c.change]))
  if (changes.size === 0) return
  for (const call of waitingCalls(record, messages)) {
    const change = changes.get(call.tool)
    // (a call no longer waiting was decided meanwhile: nothing to refuse)
    if (change) turn.refuse(call.callId, { kind: 'upgraded', tool: call.tool, change }).catch(() => undefined)
  }
}

/**
 * Takes over the turns left by engines that are gone and tracks them here; resolves with them
 * once each one's resumption is in its log (its row shows the state it resumed in).
 *
 * @example
 * const resumed = await takeOverTurns({ config, services, turns, running })
 */
export async function takeOverTurns(engine: { config: ResolvedConfig; services: TurnServices; turns: TurnDeps; running: RunningTurns }): Promise<RunningTurn[]> {
  const here = new Set(engine.running.all().map((t) => t.id))
  const recovered = (await recoverTurns(engine, (id) => here.has(id))).map((turn) => engine.running.track(turn))
  await Promise.all(recovered.map((turn) => turn.recorded()))
  return recovered
}
