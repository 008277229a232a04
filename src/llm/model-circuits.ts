/**
 * The models' circuits of every engine on a database (`circuitBreaker`): a step asks before its
 * request whether the model may be asked, and says after it whether the provider failed. Rows
 * are read before each request (not even read while the store's `changeMark` says no circuit was
 * written since) and written only when something changes (a failure, a probe, a close): a step
 * that succeeds on a closed circuit writes nothing.
 *
 * The circuits are advisory: a database that cannot be read or written leaves the request to go
 * (the turn's own writes find the outage).
 */
import type { CircuitRecord, CircuitStore } from '../store/store'
import { admit, afterAnswer, afterFailure, circuitState, probeReleased, type CircuitAdmission, type CircuitBreakerOptions, type CircuitState } from './circuit-rule'

/** A model's circuit as `engine.modelHealth()` lists it. */
export interface ModelHealth {
  model: string
  state: CircuitState
  /** The provider's failures counted in the current window (or since the circuit opened). */
  failures: number
  /** While open: when it half-opens (epoch ms). */
  openUntil?: number
}

/** The turn whose step changed a circuit: the `model.circuit` event names it. */
export interface CircuitOrigin {
  sessionId: string
  turnId: string
}

/** What the engine hears when a step opens or closes a circuit. */
export type CircuitChange = (health: ModelHealth, origin: CircuitOrigin) => void

/** Compare-and-set rounds before a change is given up (each loses only to another engine's write). */
const writeRounds = 5

export class ModelCircuits {
  /** Each model's row as last read, at the store's change mark then. */
  readonly #read = new Map<string, { mark: string | number; record: CircuitRecord | undefined }>()

  constructor(
    private readonly store: CircuitStore,
    private readonly options: CircuitBreakerOptions,
    private readonly onChange: CircuitChange = () => undefined,
    private readonly now: () => number = Date.now,
  ) {}

  /** Before a request to `model`: go (taking a half-open circuit's probe when it is free), or wait. */
  async admit(model: string): Promise<CircuitAdmission> {
    try {
      for (let round = 0; round < writeRounds; round++) {
        const admission = admit(await this.#get(model), this.now(), this.options)
        if (!admission.send || !admission.probe || (await this.store.put(admission.probe))) return admission
      }
    } catch {
      // (advisory: see the module's comment)
    }
    return { send: true }
  }

  /**
   * The provider failed a request to `model` (its kind of failure: an outage, overload, a
   * timeout); `heldUntil`: it said not to ask before then (a `retry-after`), which holds every engine.
   */
  failed(model: string, origin: CircuitOrigin, heldUntil?: number): Promise<void> {
    return this.#change(model, origin, (record, now) => afterFailure(record, model, now, this.options, heldUntil))
  }

  /** The provider answered the probe of `model`'s circuit: it closes. */
  answered(model: string, origin: CircuitOrigin): Promise<void> {
    return this.#change(model, origin, afterAnswer)
  }

  /** The probe ended without an answer (its step was stopped): another request may probe. */
  released(model: string, origin: CircuitOrigin): Promise<void> {
    return this.#change(model, origin, probeReleased)
  }

  /** Each model's circuit: the names given (closed when they never failed), and any other with a row. */
  async health(names: readonly string[]): Promise<ModelHealth[]> {
    const now = this.now()
    const rows = new Map((await this.store.list()).map((row) => [row.model, row]))
    const all = [...new Set([...names, ...rows.keys()])].sort()
    return all.map((model) => healthOf(model, rows.get(model), now, this.options))
  }

  /** The model's row, read again only when the store cannot say that no circuit was written since the last read. */
  async #get(model: string): Promise<CircuitRecord | undefined> {
    // (the mark first: a write after it makes the next mark differ)
    const mark = this.store.changeMark?.()
    const known = this.#read.get(model)
    if (mark !== undefined && known?.mark === mark) return known.record
    const record = await this.store.get(model)
    if (mark !== undefined) this.#read.set(model, { mark, record })
    return record
  }

  async #change(model: string, origin: CircuitOrigin, next: (record: CircuitRecord | undefined, now: number) => CircuitRecord | undefined): Promise<void> {
    try {
      for (let round = 0; round < writeRounds; round++) {
        const now = this.now()
        const record = await this.store.get(model)
        const changed = next(record, now)
        if (!changed) return
        if (!(await this.store.put(changed))) continue
        if (circuitState(record, now) !== circuitState(changed, now)) this.onChange(healthOf(model, changed, now, this.options), origin)
        return
      }
    } catch {
      // (advisory: see the module's comment)
    }
  }
}

function healthOf(model: string, record: CircuitRecord | undefined, now: number, options: CircuitBreakerOptions): ModelHealth {
  const state = circuitState(record, now)
  // (a closed circuit's failures of a window that has passed count no more)
  const counted = record && (state !== 'closed' || now - record.since < options.windowMs) ? record.failures : 0
  return { model, state, failures: counted, ...(state === 'open' ? { openUntil: record!.openUntil! } : {}) }
}
