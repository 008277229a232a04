/**
 * Doom-loop detection: a model calling the same tool with the same input again and again, or
 * cycling through a short sequence of calls (A, B, A, B, …). Pure: the calls in, a verdict out.
 * Two calls are the same when their tools and the canonical JSON of their inputs are (object keys
 * sorted, so `{a,b}` and `{b,a}` are one input).
 */
import { canonicalJson } from '../core/input-digest'

export interface DoomLoopOptions {
  /** `stop` fails the turn with DoomLoopError; `ask` asks for approval of the looping calls; `off`. */
  policy: 'stop' | 'ask' | 'off'
  /** The same call this many times in a row is a loop. Default 3. */
  repeats: number
  /** Longest cycle looked for (A,B is 2). Default 4. */
  maxCycleLength: number
  /** A cycle repeated this many times in a row is a loop (A,B,A,B is 2). Default 2. */
  cycleRepeats: number
}

export const defaultDoomLoopOptions: DoomLoopOptions = Object.freeze({
  policy: 'stop',
  repeats: 3,
  maxCycleLength: 4,
  cycleRepeats: 2,
}) as DoomLoopOptions

export interface ToolCallSignature {
  tool: string
  input: unknown
}

export interface DoomLoop {
  kind: 'repeat' | 'cycle'
  /** The calls of one period of the loop, in order (one call for `repeat`). */
  calls: ToolCallSignature[]
  /** How many of the most recent calls the loop covers. */
  length: number
}

/**
 * Looks for a loop at the end of `calls` (the turn's tool calls, oldest first).
 *
 * @example
 * detectDoomLoop([a, a, a], defaultDoomLoopOptions) // { kind: 'repeat', calls: [a], length: 3 }
 * detectDoomLoop([a, b, a, b], defaultDoomLoopOptions) // { kind: 'cycle', calls: [a, b], length: 4 }
 */
export function detectDoomLoop(given: ToolCallSignature[], options: DoomLoopOptions): DoomLoop | null {
  if (options.policy === 'off') return null
  // Only the last calls can make a loop: a turn's check costs the same at its 100th step as at its 2nd.
  const calls = given.length > doomLoopWindow(options) ? given.slice(-doomLoopWindow(options)) : given
  const keys = calls.map(callKey)
  for (let period = 1; period <= options.maxCycleLength; period++) {
    const times = period === 1 ? options.repeats : options.cycleRepeats
    const length = period * times
    if (times < 2 || keys.length < length) continue
    const tail = keys.slice(-length)
    const block = tail.slice(0, period)
    // A cycle of identical calls is a repeat, reported at period 1.
    if (period > 1 && block.every((k) => k === block[0])) continue
    if (tail.every((key, i) => key === block[i % period])) {
      return { kind: period === 1 ? 'repeat' : 'cycle', calls: calls.slice(-length, -length + period || undefined), length }
    }
  }
  return null
}

/**
 * A call's tool and the canonical JSON of its input, made once per input object (an input is
 * one call's): every step's check reads the turn's last calls again, and a stored call's input
 * is not changed (an approval's edit replaces it).
 */
const callKeys = new WeakMap<object, { tool: string; key: string }>()

function callKey({ tool, input }: ToolCallSignature): string {
  if (typeof input !== 'object' || input === null) return `${tool}\u0000${canonicalJson(input)}`
  const known = callKeys.get(input)
  if (known?.tool === tool) return known.key
  const key = `${tool}\u0000${canonicalJson(input)}`
  // (one object given as the input of calls of two tools: each call's key is its own)
  if (!known) callKeys.set(input, { tool, key })
  return key
}

/**
 * How many of the most recent calls a loop can span under `options` (the longest repeat or
 * cycle looked for): older calls never change the verdict, so a caller may pass only these.
 *
 * @example
 * doomLoopWindow(defaultDoomLoopOptions) // 8 (a cycle of 4 calls, twice)
 */
export function doomLoopWindow(options: DoomLoopOptions): number {
  return Math.max(options.repeats, options.maxCycleLength * options.cycleRepeats)
}
