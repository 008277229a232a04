/**
 * A stored turn read as the model calls it made, in order: each step attempt and each
 * compaction summary request, what it answered (its parts, or its summary) and how it ended
 * (finished, failed with a stored error, or cut off by an abort, a crash or a storage failure).
 * The transition log says which calls were made (every entry into `streaming` or `compacting`
 * is one); the parts, tagged with their step and attempt, say what each answered.
 */
import { TurnNotFoundError, type SerializedError } from '../core/errors'
import type { MessageWithParts, Part, StoredTurnOptions, TransitionRecord, TurnRecord } from '../core/types'
import type { RecordingSource } from './recording-source'
import { crashedState, retryWaitStates, stepStreamState, summaryState, workOf } from '../../machines/turn.machine'

/** How a recorded call ended. */
export type RecordedOutcome =
  /** The stream finished: `step.finished`, or `compaction.finished`. */
  | { type: 'finished' }
  /** The call failed with this stored error (`step.failed`, `compaction.failed`). */
  | { type: 'failed'; error: SerializedError }
  /** The turn left the call another way (an abort, a crash, a failed write) or never left it: the recording stops there. */
  | { type: 'cut'; event: string | undefined }

export interface RecordedCall {
  /** 1-based position among the turn's model calls. */
  call: number
  kind: 'step' | 'summary'
  /** The chart's step and attempt when the call was made. */
  step: number
  attempt: number
  outcome: RecordedOutcome
  /** A step's parts of this attempt, in order (step-start, text, reasoning, tools, files, sources, step-finish). */
  parts: Part[]
  /** A finished summary request: its summary message (the `compaction` part and the summary text, the request's usage on `info.tokens`). */
  summary?: MessageWithParts
}

export interface RecordedTurn {
  turn: TurnRecord
  /** `turn <id>`, as errors name the recording. */
  label: string
  options: StoredTurnOptions | undefined
  /** The session's messages before the turn (what the model saw of the past). */
  history: MessageWithParts[]
  /** The turn's own messages: its prompt, its assistant messages and summaries. */
  own: MessageWithParts[]
  /** The turn's transition log. */
  transitions: TransitionRecord[]
  calls: RecordedCall[]
}

/**
 * Reads a stored turn's model calls. Throws `TurnNotFoundError` for an unknown turn.
 *
 * @example
 * const { calls } = await readRecordedTurn(engine, turnId)
 * calls.map((c) => `${c.kind} ${c.step}.${c.attempt}: ${c.outcome.type}`) // ['step 1.1: finished', 'step 2.1: failed', …]
 */
export async function readRecordedTurn(source: RecordingSource, turnId: string): Promise<RecordedTurn> {
  const turn = await source.getTurn(turnId)
  if (!turn) throw new TurnNotFoundError(turnId)
  const [rows, messages] = await Promise.all([source.transitions(turnId), source.messages(turn.sessionId)])
  const first = messages.findIndex((m) => m.info.turnId === turnId)
  const history = first < 0 ? messages : messages.slice(0, first)
  const own = first < 0 ? [] : messages.slice(first).filter((m) => m.info.turnId === turnId)
  return { turn, label: `turn ${turnId}`, options: turn.options, history, own, transitions: rows, calls: recordedCalls(rows, own) }
}

/**
 * The model calls of a transition log, matched with the turn's messages.
 *
 * @example
 * recordedCalls(await engine.transitions(turnId), ownMessages)
 */
export function recordedCalls(rows: TransitionRecord[], own: MessageWithParts[]): RecordedCall[] {
  const answers = own.filter((m) => m.info.role === 'assistant' && !m.info.summary).flatMap((m) => m.parts)
  const summaries = own.filter((m) => m.info.summary)
  const calls: RecordedCall[] = []
  let step = 0
  let attempt = 1
  let summariesUsed = 0
  let open: RecordedCall | undefined
  for (const row of rows) {
    if (open && workOf(row.from)?.boundBy === 'model') {
      open.outcome = outcomeOf(row)
      if (open.kind === 'summary' && open.outcome.type === 'finished') open.summary = summaries[summariesUsed++]
      open = undefined
    }
    // The chart's own counting (machines/turn.machine.ts): a new step after a start, the tools,
    // a compaction or a recovery that restarts the step; a new attempt after a retry wait.
    if (row.to === stepStreamState) {
      if (retryWaitStates.has(row.from)) attempt++
      else {
        step = row.event === 'turn.start' ? 1 : step + 1
        attempt = 1
      }
      open = { call: calls.length + 1, kind: 'step', step, attempt, outcome: { type: 'cut', event: undefined }, parts: [] }
      open.parts = answers.filter((p) => p.step === step && p.attempt === attempt)
      calls.push(open)
    } else if (row.to === summaryState) {
      if (retryWaitStates.has(row.from)) attempt++
      else if (row.from !== crashedState) attempt = 1
      open = { call: calls.length + 1, kind: 'summary', step, attempt, outcome: { type: 'cut', event: undefined }, parts: [] }
      calls.push(open)
    }
  }
  return calls
}

function outcomeOf(row: TransitionRecord): RecordedOutcome {
  if (row.event === 'step.finished' || row.event === 'compaction.finished') return { type: 'finished' }
  if ((row.event === 'step.failed' || row.event === 'compaction.failed') && isRecord(row.payload.error)) {
    return { type: 'failed', error: row.payload.error as SerializedError }
  }
  return { type: 'cut', event: row.event }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null
}
