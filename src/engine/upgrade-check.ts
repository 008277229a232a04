/**
 * Upgrades with turns in flight: each turn stored the fingerprint of the tools it can call and
 * its model's provider id when it started (conversation/resolve-turn-options.ts);
 * `engine.upgradeCheck()` holds every open turn against this engine's tools and models, so a
 * deploy can check before it starts. (A call of a changed tool in a resumed turn is an error
 * part naming it: src/tools/run-tools.ts.)
 */
import { waitOf } from '../../machines/turn.machine'
import type { ResolvedConfig } from '../config/resolved-config'
import type { MessageWithParts, ToolPart, TurnRecord } from '../core/types'
import type { Store } from '../store/store'
import { fingerprintChanges, toolFingerprint, type ToolChange, type ToolFingerprint } from '../tools/tool-fingerprint'
import type { EngineCall } from './engine-calls'
import { callWait } from '../core/call-wait'

/**
 * How the engine's configuration breaks an open turn:
 * - `removed`: a tool the turn can call is not registered here;
 * - `schema-changed`: its input schema differs from the one the turn started with;
 * - `pending-approval-of-removed` / `pending-approval-of-schema-changed`: the turn waits for a
 *   person's decision on a call of such a tool (resumed here and approved, the call is not run:
 *   an error part names the tool and the change; the model sees it);
 * - `model-removed`: the turn's model name is not registered here (resumed here, it fails);
 * - `model-changed`: the name is registered but with another provider model id.
 */
export type UpgradeChange = ToolChange | 'pending-approval-of-removed' | 'pending-approval-of-schema-changed' | 'model-removed' | 'model-changed'

/** One way the engine's configuration breaks one open turn. */
export interface UpgradeBreak {
  turnId: string
  sessionId: string
  /** The tool concerned; null for a model change. */
  tool: string | null
  change: UpgradeChange
  /** The turn's stored state (`awaiting-approval`, `streaming`, …). */
  state: string
  /** The waiting call (the `pending-approval-of-*` changes). */
  callId?: string
  /** The turn's registered model name (the `model-*` changes), and the provider ids stored and configured. */
  model?: string
  modelId?: { stored: string; current: string }
}

export interface UpgradeCalls {
  /**
   * Holds every open turn in the database (run by any engine, waiting for a person, or left by
   * a crash) against this engine's tools and models: resolves with one entry per turn and tool
   * (or model) this configuration would break, `[]` when a deploy of it breaks none. A turn
   * stored before fingerprints is checked by its tool names only.
   *
   * @example
   * const next = await createEngine({ database, model, tools: newTools, recovery: { onOpen: false } })
   * const breaks = await next.upgradeCheck()
   * // [{ turnId, sessionId, tool: 'deploy', change: 'pending-approval-of-removed', callId, state: 'awaiting-approval' }]
   */
  upgradeCheck(): Promise<UpgradeBreak[]>
}

/**
 * @example
 * const engine = { ...upgradeCalls({ config, store, call }), ... }
 */
export function upgradeCalls(deps: { config: ResolvedConfig; store: Store; call: EngineCall }): UpgradeCalls {
  const { config, store, call } = deps
  return {
    upgradeCheck: () =>
      call('check open turns against the configuration', async () => {
        const current = config.toolFingerprint ?? (await toolFingerprint(config.tools))
        const out: UpgradeBreak[] = []
        for (const turn of await store.turns.open()) {
          const messages = awaitsDecision(turn.state) ? await store.messages.list(turn.sessionId, { fromLatestSummary: true }) : []
          out.push(...upgradeBreaks(config, current, turn, messages))
        }
        return out
      }),
  }
}

/**
 * How `config` (its tools' fingerprint `current`) breaks `turn`; `messages`: the session's, to
 * find the calls a waiting turn asks a person about.
 */
function upgradeBreaks(config: Pick<ResolvedConfig, 'models'>, current: ToolFingerprint, turn: TurnRecord, messages: MessageWithParts[]): UpgradeBreak[] {
  const at = { turnId: turn.id, sessionId: turn.sessionId, state: turn.state }
  const stored = turn.options
  const out: UpgradeBreak[] = []
  if (stored) {
    const model = config.models[stored.model]
    // (a fallback model removed: the turn could not be configured again, as with its first)
    for (const name of stored.fallbacks ?? []) if (!Object.hasOwn(config.models, name)) out.push({ ...at, tool: null, change: 'model-removed', model: name })
    if (!model) out.push({ ...at, tool: null, change: 'model-removed', model: stored.model })
    else if (stored.modelId !== undefined && model.modelId !== stored.modelId) {
      out.push({ ...at, tool: null, change: 'model-changed', model: stored.model, modelId: { stored: stored.modelId, current: model.modelId } })
    }
  }
  const waiting = waitingCalls(turn, messages)
  for (const { tool, change } of toolChanges(stored, current)) {
    const calls = waiting.filter((p) => p.tool === tool)
    if (calls.length === 0) out.push({ ...at, tool, change })
    for (const call of calls) out.push({ ...at, tool, change: `pending-approval-of-${change}`, callId: call.callId })
  }
  return out
}

/** The stored tools that `current` lacks or changed (by name alone for a turn stored before fingerprints). */
function toolChanges(stored: TurnRecord['options'], current: ToolFingerprint): Array<{ tool: string; change: ToolChange }> {
  if (stored?.toolFingerprint) return fingerprintChanges(stored.toolFingerprint, current)
  return (stored?.tools ?? []).filter((name) => !Object.hasOwn(current, name)).map((tool) => ({ tool, change: 'removed' as const }))
}

/** A turn in `state` waits for a person's decision on its calls (the chart's `meta.wait`). */
const awaitsDecision = (state: string) => waitOf(state)?.awaits === 'decision'

/** The calls a turn waiting for a decision waits on (its last assistant message's). */
function waitingCalls(turn: Pick<TurnRecord, 'id' | 'state'>, messages: MessageWithParts[]): ToolPart[] {
  if (!awaitsDecision(turn.state)) return []
  const assistant = messages.filter((m) => m.info.turnId === turn.id && m.info.role === 'assistant').at(-1)
  return (assistant?.parts ?? []).filter((p): p is ToolPart => p.type === 'tool' && callWait(p.state)?.kind === 'approval')
}
