/**
 * The engine's models' circuits (`circuitBreaker`), their rate limits (`rateLimits`) and
 * `engine.modelHealth()`: kept in the store when it keeps circuits (every engine on the database
 * sees one row per model), else by this engine alone.
 */
import type { ResolvedConfig } from '../config/resolved-config'
import type { Bus } from '../core/bus'
import { ModelCircuits, type ModelHealth } from '../llm/model-circuits'
import { ModelRateLimits } from '../llm/model-rate-limits'
import { MemoryStore } from '../store/memory/memory-store'
import type { Store } from '../store/store'
import type { EngineCall } from './engine-calls'

export interface ModelHealthCalls {
  /**
   * Each model's circuit: every registered model (closed when it never failed) and any other
   * the database keeps a circuit for, by name, as the engines on the database see it now.
   * Empty with `circuitBreaker: false`.
   */
  modelHealth(): Promise<ModelHealth[]>
}

/**
 * The circuits a step asks before its request; undefined when `circuitBreaker` is `false`. A
 * step that opens or closes one publishes `model.circuit`.
 *
 * @example
 * const circuits = engineCircuits(config, store, bus)
 */
export function engineCircuits(config: ResolvedConfig, store: Store, bus: Bus): ModelCircuits | undefined {
  if (config.circuitBreaker === false) return undefined
  return new ModelCircuits(modelRows(store), config.circuitBreaker, (health, origin) => bus.publish({ type: 'model.circuit', ...origin, ...health }))
}

/**
 * The rate limits a step asks before its request; undefined when no model has one.
 *
 * @example
 * const rateLimits = engineRateLimits(config, store)
 */
export function engineRateLimits(config: ResolvedConfig, store: Store): ModelRateLimits | undefined {
  return Object.keys(config.rateLimits).length > 0 ? new ModelRateLimits(modelRows(store), config.rateLimits) : undefined
}

/** The models' rows: the store's, or (a store of the app's own without circuits) this engine's, in memory. */
const modelRows = (store: Store) => store.circuits ?? new MemoryStore().circuits

/**
 * @example
 * const engine = { ...modelHealthCalls({ config, circuits, call }), ... }
 */
export function modelHealthCalls({ config, circuits, call }: { config: ResolvedConfig; circuits: ModelCircuits | undefined; call: EngineCall }): ModelHealthCalls {
  return {
    modelHealth: () => call("read the models' circuits", async () => (circuits ? circuits.health(Object.keys(config.models)) : [])),
  }
}
