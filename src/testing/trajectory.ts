/**
 * A turn read as its trajectory: the steps the model took, each with its text, its reasoning,
 * its tool calls (input, result or error) and its usage, plus the turn's outcome and its chart
 * path. What an eval compares between two runs of one case (`diffTrajectories`) and what a
 * scorer reads (the tool calls in order, the final text).
 *
 * A step is the last attempt of each step number: a failed attempt's parts stay in the store,
 * closed, but the attempt that counted is the one the turn went on from (`attempts` says how
 * many there were). A compaction's summary is not a step.
 */
import type { SerializedError } from '../core/errors'
import type { MessageWithParts, Part, TextPart, ToolPart, TurnOutcome } from '../core/types'
import { readRecordedTurn, type RecordedTurn } from './recorded-turn'
import type { RecordingSource } from './recording-source'

export interface TrajectoryToolCall {
  toolName: string
  input: unknown
  /** The tool's result, when the call completed. */
  output?: unknown
  /** The error message, when the call failed (a denial is one: "the user denied this tool call…"). */
  error?: string
  /** The call's last state: `completed`, `error`, or where it stopped (`pending`, `running`, `in-doubt`, `deferred`). */
  status: string
  /** The call's id: kept for reading, never compared (another run's ids differ). */
  callId: string
}

export interface TrajectoryStep {
  /** The step's number in the turn (1-based). */
  index: number
  /** The step's text parts, joined by a newline. */
  text: string
  /** The step's reasoning parts, joined by a newline. */
  reasoning: string
  toolCalls: TrajectoryToolCall[]
  /** The step's usage from its finish, null when it never finished (cut off, failed). */
  usage: { inputTokens: number; outputTokens: number } | null
  /** How the step finished (`stop`, `tool-calls`, `length`…), null when it never did. */
  finish: string | null
  /** Attempts the step took (1 unless it was retried); the step is its last attempt. */
  attempts: number
}

export interface Trajectory {
  turnId: string
  sessionId: string
  outcome: TurnOutcome | null
  error: SerializedError | null
  /** The chart path: every state the turn entered, in order. */
  states: string[]
  steps: TrajectoryStep[]
  /** The steps' usage, summed. */
  usage: { inputTokens: number; outputTokens: number }
  /** The text of the last step that has text: the turn's answer ('' when no step has text). */
  finalText: string
}

/** What a trajectory is made of: a run's turn, outcome, states and answer parts (a `RerunSide` is one). */
export interface TrajectorySource {
  turnId: string
  sessionId: string
  outcome: TurnOutcome | null
  error: SerializedError | null
  states: string[]
  parts: Part[]
}

/**
 * @example
 * const result = await rerunTurn(engine, turnId, { model: otherModel })
 * trajectoryOf(result.rerun).steps.map((s) => s.toolCalls.map((c) => c.toolName)) // [['search'], ['fetch', 'fetch'], []]
 */
export function trajectoryOf(side: TrajectorySource): Trajectory {
  const byStep = new Map<number, Part[]>()
  const attempts = new Map<number, number>()
  for (const part of side.parts) {
    // Parts without a step are a prompt's or a summary's; a compaction marker is no step's either.
    if (part.step === undefined || part.type === 'compaction') continue
    const attempt = part.attempt ?? 1
    const last = attempts.get(part.step) ?? 0
    if (attempt > last) {
      attempts.set(part.step, attempt)
      byStep.set(part.step, [])
    }
    if (attempt >= last) byStep.get(part.step)!.push(part)
  }
  const steps = [...byStep.keys()].sort((x, y) => x - y).map((index) => stepOf(index, byStep.get(index)!, attempts.get(index)!))
  const usage = steps.reduce((sum, s) => ({ inputTokens: sum.inputTokens + (s.usage?.inputTokens ?? 0), outputTokens: sum.outputTokens + (s.usage?.outputTokens ?? 0) }), { inputTokens: 0, outputTokens: 0 })
  return {
    turnId: side.turnId,
    sessionId: side.sessionId,
    outcome: side.outcome,
    error: side.error,
    states: side.states,
    steps,
    usage,
    finalText: [...steps].reverse().find((s) => s.text !== '')?.text ?? '',
  }
}

/**
 * The trajectory of a stored turn, read from an engine or a store (`storeSource(store)`).
 * Throws `TurnNotFoundError` for an unknown turn.
 *
 * @example
 * const before = await readTrajectory(engine, turnId)
 */
export async function readTrajectory(source: RecordingSource, turnId: string): Promise<Trajectory> {
  return trajectoryOf(recordedSide(await readRecordedTurn(source, turnId)))
}

/** A stored turn as a run to compare: its outcome, its path through the chart, its answers' parts. */
export function recordedSide(recording: RecordedTurn): TrajectorySource {
  return {
    turnId: recording.turn.id,
    sessionId: recording.turn.sessionId,
    outcome: recording.turn.outcome,
    error: recording.turn.error,
    states: recording.transitions.map((t) => t.to),
    parts: answerParts(recording.own),
  }
}

/** The parts a turn produced: its assistant messages', not its prompt's. */
export function answerParts(messages: readonly MessageWithParts[]): Part[] {
  return messages.filter((m) => m.info.role === 'assistant').flatMap((m) => m.parts)
}

function stepOf(index: number, parts: Part[], attempts: number): TrajectoryStep {
  const joined = (type: 'text' | 'reasoning') =>
    parts
      .flatMap((p) => (p.type === type ? [(p as TextPart).text] : []))
      .filter((t) => t !== '')
      .join('\n')
  const finish = parts.find((p) => p.type === 'step-finish')
  return {
    index,
    text: joined('text'),
    reasoning: joined('reasoning'),
    toolCalls: parts.filter((p): p is ToolPart => p.type === 'tool').map(toolCallOf),
    usage: finish ? { inputTokens: finish.tokens.input, outputTokens: finish.tokens.output } : null,
    finish: finish ? finish.reason : null,
    attempts,
  }
}

function toolCallOf(part: ToolPart): TrajectoryToolCall {
  const { state } = part
  return {
    toolName: part.tool,
    input: state.input,
    ...(state.status === 'completed' ? { output: state.output } : {}),
    ...(state.status === 'error' ? { error: state.error } : {}),
    status: state.status,
    callId: part.callId,
  }
}
