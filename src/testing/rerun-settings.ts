/**
 * The engine options a re-run needs to decide as the recorded turn did, read from the turn
 * where the app's own options are not stored: the context limit from the steps that did and did
 * not overflow by their usage, the retry limit from a `RetriesExhaustedError`, where a stop
 * condition (`stopWhen`, never stored) held from the step boundary that says so, the step
 * limit and compaction switches from the chart's stored input (or the source engine's options).
 */
import type { TurnInput } from '../../machines/turn.types'
import { workOf } from '../../machines/turn.machine'
import type { ModelLimits } from '../policy/overflow'
import type { SerializedError } from '../core/errors'
import type { Part, StepFinishPart, TransitionRecord } from '../core/types'
import type { RecordedTurn } from './recorded-turn'

export interface RerunSettings {
  /** A context window under which the steps that overflowed did, and the others did not (with no output reserve). */
  limits?: ModelLimits
  /** `retry.maxAttempts`, when the turn ran out of attempts. */
  maxAttempts?: number
  maxSteps?: number
  /** The turn stopped at its n-th step boundary (1-based) because a `stopWhen` condition held. */
  stopAtBoundary?: number
  compaction: { auto: boolean; maxPerTurn?: number }
  /** What could not be read back, in a sentence each. */
  notes: string[]
}

/**
 * @example
 * rerunSettings(recording, rows, await store.turns.input(turnId))
 * // { limits: { context: 970, output: 0 }, compaction: { auto: true, maxPerTurn: 3 }, notes: [] }
 */
export function rerunSettings(recording: RecordedTurn, rows: TransitionRecord[], input: Partial<TurnInput> | undefined): RerunSettings {
  const notes: string[] = []
  const settings: RerunSettings = { compaction: { auto: input?.autoCompact ?? true, ...(input?.maxCompactions !== undefined ? { maxPerTurn: input.maxCompactions } : {}) }, notes }
  if (input?.maxSteps !== undefined) settings.maxSteps = input.maxSteps
  const limits = contextLimit(recording, rows, notes)
  if (limits) settings.limits = limits
  const exhausted = rows.map((r) => r.payload.error).find(isExhausted)
  if (exhausted) settings.maxAttempts = exhausted.attempts
  // The step gate's `gate.complete { rule: 'stopWhen' }` after a step's tools (a log written
  // before the gate: the boundary's own `tools.finished { stop: true }`).
  const stop = rows.findIndex((r) => (r.event === 'gate.complete' && r.payload.rule === 'stopWhen') || (r.event === 'tools.finished' && r.payload.stop === true))
  if (stop >= 0) settings.stopAtBoundary = rows.slice(0, stop + 1).filter((r) => r.event === 'tools.finished').length
  return settings
}

/** The smallest usage that overflowed is the window; every step that did not overflow must stay below it. */
function contextLimit(recording: RecordedTurn, rows: TransitionRecord[], notes: string[]): ModelLimits | undefined {
  const decided: Array<{ tokens: number; overflow: boolean }> = []
  let call = 0
  for (const row of rows) {
    if (workOf(row.to)?.boundBy === 'model') call++
    if (row.event !== 'step.finished') continue
    const finish = recording.calls[call - 1]?.parts.find((p: Part): p is StepFinishPart => p.type === 'step-finish')
    const tokens = finish ? finish.tokens.input + finish.tokens.output : 0
    if (tokens > 0) decided.push({ tokens, overflow: row.payload.overflow === true })
  }
  const over = decided.filter((d) => d.overflow).map((d) => d.tokens)
  if (over.length === 0) return undefined
  const context = Math.min(...over)
  if (decided.some((d) => !d.overflow && d.tokens >= context)) {
    notes.push('the steps that filled the context and those that did not overlap in usage: the re-run detects no overflow from usage')
    return undefined
  }
  return { context, output: 0 }
}

function isExhausted(value: unknown): value is SerializedError & { attempts: number } {
  const record = value as { name?: unknown; reason?: unknown; attempts?: unknown } | undefined
  return record?.name === 'RetriesExhaustedError' && record.reason === 'max-attempts' && typeof record.attempts === 'number'
}
