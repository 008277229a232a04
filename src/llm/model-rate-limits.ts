/**
 * The models' rate limits of every engine on a database (`rateLimits`): a step asks before its
 * request whether the model's limit allows one more, which counts it on the model's row (the
 * circuit's, by compare-and-set); once the answer began it counts the request from then, with
 * the tokens the provider reported (a second write per request). A model without a limit is not
 * asked about.
 *
 * Unlike a circuit, a limit is held to: a request goes only once counted. A database that
 * cannot be read or written lets the request go (the turn's own writes find the outage), and
 * so does a store without circuits, whose engine counts alone.
 */
import type { CircuitStore } from '../store/store'
import { admitRequest, answeredRequest, type RateLimit } from './rate-limit-rule'

/** A request counted under its model's limit: what `used` corrects. */
export interface RateTicket {
  model: string
  second: number
  /** The tokens it was counted for (estimated). */
  tokens: number
}

/** What a request may do: go (counted, unless the database could not be asked), or wait until a time. */
export type RateLimitAdmission = { send: true; ticket?: RateTicket } | { send: false; until: number }

/**
 * Compare-and-set rounds before a request waits a moment instead: each lost round is another
 * request counted, so many lose only when many are admitted at once.
 */
const countRounds = 20
/** How long a request that lost every round waits before it asks again. */
const contendedWaitMs = 100

export class ModelRateLimits {
  constructor(
    private readonly store: CircuitStore,
    private readonly limits: Readonly<Record<string, RateLimit>>,
    private readonly now: () => number = Date.now,
  ) {}

  /** Before a request to `model` of `estimate()` tokens (read only when its tokens are limited): go, counted, or wait; undefined when the model has no limit. */
  async admit(model: string, estimate: () => number): Promise<RateLimitAdmission | undefined> {
    const limit = this.limits[model]
    if (!limit) return undefined
    const counted = limit.tokensPerMinute === undefined ? 0 : estimate()
    try {
      for (let round = 0; round < countRounds; round++) {
        const admission = admitRequest(await this.store.get(model), model, this.now(), limit, counted)
        if (!admission.send) return admission
        if (await this.store.put(admission.row)) return { send: true, ticket: { model, second: admission.second, tokens: counted } }
      }
    } catch {
      // (see the module's comment: the request goes, counted nowhere)
      return { send: true }
    }
    return { send: false, until: this.now() + contendedWaitMs }
  }

  /**
   * The provider began to answer the request at `at` (or failed it then): it counts from that
   * second on, with the tokens it `used` when the provider said (and the model's tokens are
   * limited).
   */
  async answered(ticket: RateTicket, at: number, used?: number): Promise<void> {
    const tokens = this.limits[ticket.model]?.tokensPerMinute === undefined ? undefined : used
    try {
      for (let round = 0; round < countRounds; round++) {
        const moved = answeredRequest(await this.store.get(ticket.model), ticket, at, tokens)
        if (!moved || (await this.store.put(moved))) return
      }
    } catch {
      // (it stays counted from its admission)
    }
  }
}
