/**
 * The AI SDK's usage → turnchart's `Tokens`, and the cost of a step.
 */
import type { LanguageModelUsage } from 'ai'
import type { Tokens } from '../core/types'

/** Prices in currency units (e.g. USD) per million tokens. All default to 0. */
export interface Pricing {
  input?: number
  output?: number
  cacheRead?: number
  cacheWrite?: number
}

/**
 * Reads the usage fields the contract names; missing numbers count as 0.
 *
 * @example
 * toTokens(part.usage) // { input: 120, output: 40, reasoning: 0, cache: { read: 100, write: 0 } }
 */
export function toTokens(usage: Partial<LanguageModelUsage> | undefined): Tokens {
  return {
    input: usage?.inputTokens ?? 0,
    output: usage?.outputTokens ?? 0,
    reasoning: usage?.outputTokenDetails?.reasoningTokens ?? 0,
    cache: {
      read: usage?.inputTokenDetails?.cacheReadTokens ?? 0,
      write: usage?.inputTokenDetails?.cacheWriteTokens ?? 0,
    },
  }
}

/**
 * Cost of a step. Cached reads and writes are priced apart from fresh input (the AI SDK's
 * input count includes them).
 *
 * @example
 * stepCost(tokens, { input: 3, output: 15 })
 */
export function stepCost(tokens: Tokens, pricing: Pricing | undefined): number {
  if (!pricing) return 0
  const fresh = Math.max(0, tokens.input - tokens.cache.read - tokens.cache.write)
  return (
    (fresh * (pricing.input ?? 0) +
      tokens.output * (pricing.output ?? 0) +
      tokens.cache.read * (pricing.cacheRead ?? pricing.input ?? 0) +
      tokens.cache.write * (pricing.cacheWrite ?? pricing.input ?? 0)) /
    1_000_000
  )
}

/** Adds step tokens to message tokens. */
export function addTokens(a: Tokens, b: Tokens): Tokens {
  return {
    input: a.input + b.input,
    output: a.output + b.output,
    reasoning: a.reasoning + b.reasoning,
    cache: { read: a.cache.read + b.cache.read, write: a.cache.write + b.cache.write },
  }
}
