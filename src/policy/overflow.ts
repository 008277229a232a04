/**
 * Usage-based context overflow: after a step, does the history still leave room for the
 * next answer? (Error-based overflow is in `classify-error.ts`.)
 */
import type { Tokens } from '../core/types'

export interface ModelLimits {
  /** Context window in tokens; 0 or absent means unknown. */
  context: number
  /** Maximum output tokens of the model. */
  output: number
}

/** Upper bound of the default output reserve: enough for a long answer without wasting a small window. */
const defaultReserveCap = 20_000

/**
 * Tokens the prompt may use: the context window minus a reserve for the model's answer
 * (default min(20,000, model output limit)), never below 0.
 *
 * @example
 * usableContext({ context: 200_000, output: 64_000 })        // 180000
 * usableContext({ context: 8_192, output: 4_096 })           // 4096
 * usableContext({ context: 128_000, output: 16_384 }, 1_000) // 127000
 */
export function usableContext(limits: ModelLimits, reserved?: number): number {
  const context = finiteOrZero(limits.context)
  const reserve = reserved ?? Math.min(defaultReserveCap, finiteOrZero(limits.output))
  return Math.max(0, context - finiteOrZero(reserve))
}

/**
 * Tokens a step occupied: input + output. The AI SDK's `inputTokens` already counts cache reads
 * and writes (they are details of it, not additions), so adding `cache.read` would count them
 * twice; reasoning tokens are likewise part of `outputTokens`. Output counts because the answer
 * becomes history for the next step.
 *
 * @example
 * stepTokenCount({ input: 1000, output: 200, reasoning: 50, cache: { read: 800, write: 0 } }) // 1200
 */
export function stepTokenCount(tokens: Tokens): number {
  return finiteOrZero(tokens.input) + finiteOrZero(tokens.output)
}

/**
 * True when the step's tokens reached the usable context, so the turn should compact before
 * the next step. False when the context limit is unknown (0 or absent): without a limit there
 * is no usage-based detection, only the provider's overflow error. Also false when the step
 * reported no usage at all (count 0), which some servers do while streaming: that is missing
 * data, not an empty context.
 *
 * @example
 * isUsageOverflow({ input: 181_000, output: 500, reasoning: 0, cache: { read: 0, write: 0 } },
 *                 { context: 200_000, output: 64_000 }) // true
 */
export function isUsageOverflow(tokens: Tokens, limits: ModelLimits, reserved?: number): boolean {
  if (!limits || !(finiteOrZero(limits.context) > 0)) return false
  const count = stepTokenCount(tokens)
  if (count <= 0) return false
  return count >= usableContext(limits, reserved)
}

function finiteOrZero(value: number | undefined): number {
  return typeof value === 'number' && Number.isFinite(value) ? value : 0
}
