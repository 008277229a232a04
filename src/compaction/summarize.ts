/**
 * Compaction: asks the model for a summary of the history and stores it as a summary message
 * (a `compaction` part and the summary text). The model is sent only what follows the latest
 * summary from then on.
 */
import type { CompactInput } from '../../machines/turn.machine'
import { CompactionFailedError, ContextOverflowError } from '../errors'
import { startIdleTimer } from '../llm/idle-timer'
import { modelStream } from '../llm/model-stream'
import { decideFailure } from '../policy/decide-failure'
import type { TurnScope } from '../turn/turn-scope'

/**
 * Summarises the turn's history. Rejects with `ContextOverflowError` when the summary request
 * itself overflows (no endless compaction loop); with `CompactionFailedError` otherwise,
 * carrying `retryDelayMs` when the retry policy allows another attempt (the chart then waits in
 * `retry-waiting` and compacts again), or `RetriesExhaustedError` as its `lastError` when not.
 *
 * @example
 * await summarize(scope, { attempt: 1, waitedMs: 0 }, signal)
 */
export async function summarize(scope: TurnScope, input: Pick<CompactInput, 'attempt' | 'waitedMs'>, signal: AbortSignal): Promise<void> {
  let failure: unknown
  let text = ''
  // The summary request gets the same idle timeout as a step: a silent stream cannot hang the turn.
  const idle = startIdleTimer(signal, scope.config.streamIdleTimeoutMs)
  try {
    const events = modelStream({
      model: scope.config.model,
      system: scope.config.system,
      messages: [...scope.modelMessages(), { role: 'user', content: scope.config.compaction.prompt }],
      abortSignal: idle.signal,
      onChunk: idle.touch,
    })
    for await (const part of events) {
      if (part.type === 'text-delta') text += part.text
      else if (part.type === 'error') {
        failure = part.error
        break
      }
    }
  } catch (error) {
    failure = error
  } finally {
    idle.stop()
  }
  if (signal.aborted) throw signal.reason
  if (idle.signal.aborted) failure = idle.signal.reason
  if (failure !== undefined) {
    const decision = decideFailure(failure, input, scope.config.failure)
    if (decision.kind === 'overflow') {
      throw new ContextOverflowError({
        reason: 'summary-overflow',
        message: `the summary request itself overflowed the context: ${decision.error.message}`,
      })
    }
    throw new CompactionFailedError(decision.error, decision.kind === 'retry' ? decision.delayMs : undefined)
  }
  // An answer without text would replace the whole history with nothing: the compaction failed.
  if (text.trim() === '') {
    throw new CompactionFailedError({ name: 'EmptySummaryError', message: 'the summary answer had no text; the history is kept as it was' })
  }
  scope.addSummary(text.trim(), true)
}
