/**
 * Compaction: asks the model for a summary of the history and stores it as a summary message
 * (a `compaction` part and the summary text). The model is sent only what follows the latest
 * summary from then on.
 */
import type { CompactInput } from '../../machines/turn.machine'
import type { TurnEvent } from '../../machines/turn.types'
import { CompactionFailedError, ContextOverflowError, serializeError } from '../core/errors'
import { startIdleTimer } from '../llm/idle-timer'
import type { StateExit } from '../core/state-exit'
import { modelStream } from '../llm/model-stream'
import { stepCost, toTokens, type Pricing } from '../llm/usage'
import type { TurnSettings } from '../core/types'
import { decideFailure, type FailurePolicies } from '../policy/decide-failure'
import type { ModelMessage } from 'ai'
import type { ProviderLanguageModel } from '../llm/language-model'
import type { Telemetry } from '../telemetry/telemetry'
import type { MessageInfo, MessageWithParts, Tokens } from '../core/types'

/** What the compaction actor reports to the chart (the same failure shape as `step.failed`). */
export type CompactionEvent = Extract<TurnEvent, { type: 'compaction.finished' | 'compaction.failed' }>

/** What a compaction needs from the turn: the model and its settings, the history, where the summary goes. */
export interface SummaryScope {
  readonly turnId: string
  readonly sessionId: string
  readonly config: {
    model: ProviderLanguageModel
    telemetry: Pick<Telemetry, 'modelCall' | 'recordOutputs'>
    system: string | undefined
    streamIdleTimeoutMs: number
    compaction: { prompt: string }
    failure: FailurePolicies
    /** The turn's call settings (the summary request uses them, without a tool choice). */
    call: Omit<TurnSettings, 'maxSteps'>
    pricing: Pricing | undefined
  }
  readonly messages: {
    modelMessages(): ModelMessage[]
    /** Stores the summary message; the model is sent only what follows it from then on. */
    addSummary(text: string, auto: boolean): MessageWithParts
    /** Persists a message's changed info (the summary's usage). */
    saveMessage(info: MessageInfo): void
  }
}

/**
 * Summarises the turn's history and reports the outcome as a chart event, as a step does:
 * `compaction.finished`, or `compaction.failed` with the failure protocol's decision
 * (`retryDelayMs` set when the retry policy allows another attempt; the chart then waits in
 * `compaction-retry-waiting`). The error is a `ContextOverflowError` when the summary request
 * itself overflows (no endless compaction loop), a `CompactionFailedError` otherwise (its
 * `lastError` a `RetriesExhaustedError` when the policy gave up). It never rejects.
 *
 * @example
 * const event = await summarize(scope, { attempt: 1, waitedMs: 0, completes: false }, exit)
 */
export async function summarize(scope: SummaryScope, input: Pick<CompactInput, 'attempt' | 'waitedMs'> & { completes: boolean }, exit: StateExit): Promise<CompactionEvent> {
  const { text, tokens, failure } = await requestSummary(scope, input.attempt, exit)
  // The chart left `compacting` (abort or stop): nothing is stored, the event is not read.
  if (exit.left) return { type: 'compaction.failed', error: serializeError(exit.reason), retryDelayMs: null }
  if (failure !== undefined) return failedSummary(failure, input, scope.config.failure)
  // An answer without text would replace the whole history with nothing: the compaction failed.
  if (text.trim() === '') {
    const empty = { name: 'EmptySummaryError', message: 'the summary answer had no text; the history is kept as it was' }
    return { type: 'compaction.failed', error: new CompactionFailedError(empty).toJSON(), retryDelayMs: null }
  }
  const summary = scope.messages.addSummary(text.trim(), true)
  if (tokens) {
    // The summary request's usage, on the summary message (counted in the turn's usage).
    summary.info.tokens = tokens
    summary.info.cost = stepCost(tokens, scope.config.pricing)
    scope.messages.saveMessage(summary.info)
  }
  return { type: 'compaction.finished', completes: input.completes }
}

/** The summary request streamed: its text and usage, or what it failed with (in its telemetry span either way). */
async function requestSummary(scope: SummaryScope, attempt: number, exit: StateExit): Promise<{ text: string; tokens?: Tokens; failure?: unknown }> {
  let failure: unknown
  let text = ''
  let tokens: Tokens | undefined
  // The summary request gets the same idle timeout as a step: a silent stream cannot hang the turn.
  const idle = startIdleTimer(exit, scope.config.streamIdleTimeoutMs)
  const { model, telemetry } = scope.config
  const span = telemetry.modelCall({ turnId: scope.turnId, sessionId: scope.sessionId, provider: model.provider, model: model.modelId, attempt })
  const messages = [...scope.messages.modelMessages(), { role: 'user' as const, content: scope.config.compaction.prompt }]
  const request = { model, system: scope.config.system, messages, settings: { ...scope.config.call, toolChoice: undefined }, abortSignal: idle.signal, onChunk: idle.touch }
  try {
    await modelStream(request, (part) => {
      if (part.type === 'text-delta') text += part.delta
      else if (part.type === 'finish') tokens = toTokens(part.usage)
      else if (part.type === 'error') {
        failure = part.error
        return false
      }
    })
  } catch (error) {
    failure = error
  } finally {
    idle.stop()
  }
  if (idle.signal.aborted && !exit.left) failure = idle.signal.reason
  span?.end(exit.left ? { error: exit.reason } : failure !== undefined ? { error: failure } : { finishReason: 'stop', output: telemetry.recordOutputs ? text : undefined })
  return { text, tokens, failure }
}

/** The failure protocol's decision on a failed summary request: an overflow of its own (never compacted again), a retry, or the end. */
function failedSummary(failure: unknown, input: Pick<CompactInput, 'attempt' | 'waitedMs'>, policies: SummaryScope['config']['failure']): CompactionEvent {
  const decision = decideFailure(failure, input, policies)
  if (decision.kind === 'overflow') {
    const error = new ContextOverflowError({ reason: 'summary-overflow', message: `the summary request itself overflowed the context: ${decision.error.message}` })
    return { type: 'compaction.failed', error: error.toJSON(), retryDelayMs: null }
  }
  const delayMs = decision.kind === 'retry' ? decision.delayMs : undefined
  return { type: 'compaction.failed', error: new CompactionFailedError(decision.error, delayMs).toJSON(), retryDelayMs: delayMs ?? null }
}
