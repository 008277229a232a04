/**
 * `recordedModel(engine, turnId)`: a language model that answers a new turn's calls with the
 * responses a stored turn recorded, call by call, with no provider. Each call gets the stored
 * call of the same position: its stream parts in order (text, reasoning with its provider
 * metadata, tool calls, files, sources, the finish with its usage), or its stored failure as
 * the provider's error (a 429 as an `APICallError` with its status, headers and body, so the new
 * engine retries it the same way); a compaction's summary request gets the stored summary.
 *
 * Each request is first compared with the one the recording was sent (rebuilt from the stored
 * turn): when the run diverged (another tool result, another system prompt, another number of
 * steps) the call fails with `RecordingDivergedError`, naming the step and what differs.
 */
import type { EngineModel } from '../config/options'
import { RecordingDivergedError } from '../core/errors'
import type { MessageWithParts } from '../core/types'
import { expectedPrompt } from './expected-prompt'
import { partStream, type StreamEnd } from './part-stream'
import { promptDifference } from './prompt-difference'
import { recordedFailure } from './recorded-failure'
import { readRecordedTurn, type RecordedCall, type RecordedOutcome, type RecordedTurn } from './recorded-turn'
import type { RecordingSource } from './recording-source'
import { withRecordedToolResults, type ToolDrift } from './tool-drift'
import { stepStreamParts, summaryStreamParts, type SpecificationVersion, type StreamPart } from './stored-stream'

export interface RecordedModelOptions {
  /**
   * The specification version the model answers with. Default: the turn's model's, when the
   * source is an engine (V3 for ai v6 providers, V4 for ai v7 ones); else `'v3'`.
   */
  specificationVersion?: SpecificationVersion
  /**
   * Compare each request's prompt with the recorded one and fail on a difference (default
   * true). `false` answers by position only, whatever the run sends.
   */
  checkPrompts?: boolean
  /**
   * Called when a call the recording was cut off in (the turn was aborted there, or its
   * process died) has been answered as far as it came: the stream then stays open, as the
   * recorded one did, until the run aborts. `rerunTurn` aborts its turn here.
   */
  onCutOff?: (call: RecordedCallInfo) => void
  /**
   * Tool results that differ from the recorded ones (live tools) do not end the recording: the
   * request is compared as if the recorded result had been sent, the recorded answers go on,
   * and each such result is reported here once (tool drift).
   */
  onToolDrift?: (drift: ToolDrift) => void
}

/** One recorded call, as `recordedModel(…).calls` lists them. */
export interface RecordedCallInfo {
  call: number
  kind: 'step' | 'summary'
  step: number
  attempt: number
  outcome: RecordedOutcome
}

/**
 * The model `recordedModel` returns: a language model object of the installed `ai` major
 * (`LanguageModelV3` for ai v6, `LanguageModelV4` for ai v7), and what it holds.
 */
export type RecordedModel = EngineModel & {
  /** The recorded calls, in order. */
  readonly calls: readonly RecordedCallInfo[]
  /** How many calls it was asked for so far. */
  readonly callsMade: number
}

/**
 * A model that answers each call of a new turn with the stored call of the same position of
 * `turnId`. Reads the turn through `source`'s public reads (an engine, or a `RecordingSource`).
 * Throws `TurnNotFoundError` for an unknown turn.
 *
 * @example
 * const recorded = await recordedModel(engine, turnId)
 * const rerun = await createEngine({ model: recorded, tools, system })   // no provider
 * const session = await rerun.createSession()
 * await rerun.prompt(session.id, 'the same prompt').done                 // the same parts
 */
export async function recordedModel(source: RecordingSource, turnId: string, options: RecordedModelOptions = {}): Promise<RecordedModel> {
  const recording = await readRecordedTurn(source, turnId)
  return recordedModelOf(recording, { ...options, specificationVersion: options.specificationVersion ?? versionOf(source, recording) })
}

/**
 * The same model from a turn already read (`readRecordedTurn`).
 *
 * @example
 * const model = recordedModelOf(await readRecordedTurn(source, turnId))
 */
export function recordedModelOf(recording: RecordedTurn, options: RecordedModelOptions = {}): RecordedModel {
  const version = options.specificationVersion ?? 'v3'
  const checkPrompts = options.checkPrompts !== false
  let made = 0
  // A drifted result is in every later request's prompt: reported once, by call id.
  const reported = new Set<string>()
  const diverged = (call: number, at: Pick<RecordedCall, 'step' | 'attempt' | 'kind'> | undefined, reason: string) =>
    new RecordingDivergedError({ recording: recording.label, call, ...(at ? { step: at.step, attempt: at.attempt, kind: at.kind } : {}), reason })
  const model = {
    specificationVersion: version,
    provider: 'turnchart.recorded',
    modelId: recording.turn.id,
    supportedUrls: {},
    calls: recording.calls.map(callSummary),
    get callsMade() {
      return made
    },
    async doGenerate() {
      throw diverged(made + 1, undefined, 'doGenerate was called: a recording answers doStream calls (the ones turnchart and streamText make)')
    },
    async doStream(callOptions: unknown) {
      const index = made++
      const call = recording.calls[index]
      if (!call) throw diverged(index + 1, nextCall(recording), `the recording has ${recording.calls.length} model calls: ${endOf(recording)}`)
      if (checkPrompts) {
        const sent = (callOptions as { prompt?: unknown[] }).prompt ?? []
        const compared = options.onToolDrift ? reportDrift(recording, call, version, sent, reported, options.onToolDrift) : sent
        const difference = requestDifference(recording, call, version, compared)
        if (difference) throw diverged(index + 1, call, difference)
      }
      const { parts, end } = answerOf(call, version)
      // Where the recording was cut off (an abort, a crash), the caller is told when the answer hangs there.
      const { onCutOff } = options
      if (end.type === 'hang' && onCutOff) end.onHang = () => onCutOff(callSummary(call))
      return { stream: partStream(parts, end), request: {}, response: { headers: {} } }
    },
  }
  // One object answers as V3 or V4 (their stream parts agree on what it sends); its static type
  // is the installed ai major's model.
  return model as unknown as RecordedModel
}

/** The prompt sent, its drifted tool results replaced by the recorded ones, each drift reported once (by call id). */
function reportDrift(recording: RecordedTurn, call: RecordedCall, version: SpecificationVersion, sent: unknown[], reported: Set<string>, report: (drift: ToolDrift) => void): unknown[] {
  const { prompt, drifts } = withRecordedToolResults(recording, expectedPrompt(recording, call, version), sent)
  for (const drift of drifts) {
    if (reported.has(drift.callId)) continue
    reported.add(drift.callId)
    report(drift)
  }
  return prompt
}

/** A recorded call as the model lists it (and as `onCutOff` is told of it). */
function callSummary({ call, kind, step, attempt, outcome }: RecordedCall) {
  return { call, kind, step, attempt, outcome }
}

/** What differs between the call's recorded prompt and `sent`; a summary request's last message (the compaction prompt) is the engine's own. */
function requestDifference(recording: RecordedTurn, call: RecordedCall, version: SpecificationVersion, sent: unknown[]): string | undefined {
  const expected = expectedPrompt(recording, call, version)
  if (call.kind === 'step') return promptDifference(expected, sent)
  const last = sent.at(-1) as { role?: string } | undefined
  if (last?.role !== 'user' || sent.length !== expected.length + 1) {
    const difference = promptDifference(expected, sent)
    return `the recording made a compaction summary request here, the run did not${difference ? ` (${difference})` : ''}`
  }
  return promptDifference(expected, sent.slice(0, -1))
}

/** The stream parts and end that reproduce a recorded call, or the error its `doStream` throws. */
function answerOf(call: RecordedCall, version: SpecificationVersion): { parts: StreamPart[]; end: StreamEnd } {
  const { outcome } = call
  if (call.kind === 'summary') {
    if (outcome.type === 'finished') return { parts: summaryStreamParts(summaryText(call.summary), call.summary?.info.tokens), end: { type: 'close' } }
    if (outcome.type === 'cut') return { parts: [{ type: 'stream-start', warnings: [] }], end: { type: 'hang' } }
    const failure = recordedFailure(outcome.error)
    if (failure.type === 'empty-summary') return { parts: summaryStreamParts('', undefined), end: { type: 'close' } }
    if (failure.type === 'empty') return { parts: [{ type: 'stream-start', warnings: [] }], end: { type: 'close' } }
    throw failure.error
  }
  const parts = stepStreamParts(call.parts, version)
  if (outcome.type === 'finished') return { parts, end: { type: 'close' } }
  // Cut off (an abort, a crash, a failed write): as far as it came; it ends there only if it had finished.
  if (outcome.type === 'cut') return { parts, end: call.parts.some((p) => p.type === 'step-finish') ? { type: 'close' } : { type: 'hang' } }
  const failure = recordedFailure(outcome.error)
  if (failure.type !== 'error') return { parts, end: { type: 'close' } }
  // An error before any output rejected the request (no step-start was stored); one after it ended the stream.
  if (!call.parts.some((p) => p.type === 'step-start')) throw failure.error
  return { parts: [...parts, { type: 'error', error: failure.error }], end: { type: 'close' } }
}

function summaryText(summary: MessageWithParts | undefined): string {
  return (summary?.parts ?? []).flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('\n')
}

/** Where a call beyond the recording would be: the step after the last finished one. */
function nextCall(recording: RecordedTurn): Pick<RecordedCall, 'step' | 'attempt' | 'kind'> {
  const last = recording.calls.at(-1)
  if (!last) return { step: 1, attempt: 1, kind: 'step' }
  return last.kind === 'step' && last.outcome.type === 'failed' ? { step: last.step, attempt: last.attempt + 1, kind: 'step' } : { step: last.step + 1, attempt: 1, kind: 'step' }
}

function endOf(recording: RecordedTurn): string {
  const { outcome, state, error } = recording.turn
  if (outcome === 'completed') return 'its turn completed there (the run took another number of steps)'
  if (outcome) return `its turn ended there as ${outcome}${error ? ` (${error.name}: ${error.message})` : ''}`
  return `its turn stopped there, unfinished in '${state}'`
}

function versionOf(source: RecordingSource, recording: RecordedTurn): SpecificationVersion {
  const name = recording.options?.model ?? 'default'
  const version = source.config?.models[name]?.specificationVersion
  return version === 'v4' ? 'v4' : 'v3'
}
