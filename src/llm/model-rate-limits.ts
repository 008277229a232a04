/**
 * The models' rate limits of every engine on a database (`rateLimits`): a step asks before its
 * request whether the model's limit allows one more, which counts it on the model's row (the
 * circuit's, by compare-and-set); after the answer it corrects the tokens it estimated by what
 * the provider reported. A model without a limit is not asked about.
 *
 * Unlike a circuit, a limit is held to: a request goes only once counted. A database that
 * cannot be read or written lets the request go (the turn's own writes find the outage), and
 * so does a store without circuits, whose engine counts alone.
 */
import type { CircuitStore } from '../store/store'
import { admitRequest, correctedTokens, type RateLimit } from './rate-limit-rule'

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

  /** The provider reported what the request used: its second counts that many tokens instead of the estimate. */
  async used(ticket: RateTicket, tokens: number): Promise<void> {
    if (this.limits[ticket.model]?.tokensPerMinute === undefined) return
    try {
      for (let round = 0; round < countRounds; round++) {
        const corrected = correctedTokens(await this.store.get(ticket.model), ticket.second, tokens - ticket.tokens)
        if (!corrected || (await this.store.put(corrected))) return
      }
    } catch {
      // (the estimate stays counted)
    }
  }
}
