/**
 * Compaction: asks the model for a summary of the history and stores it as a summary message
 * (a `compaction` part and the summary text). The model is sent only what follows the latest
 * summary from then on.
 */
import type { CompactInput } from '../../machines/turn.machine'
import { CompactionFailedError, ContextOverflowError, RetriesExhaustedError } from '../errors'
import { startIdleTimer } from '../llm/idle-timer'
import { modelStream } from '../llm/model-stream'
import { classifyError } from '../policy/classify-error'
import { planRetry } from '../policy/retry-delay'
import { retryOptionsFor } from '../policy/connection-refused'
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
    const classified = classifyError(failure)
    if (classified.kind === 'overflow') {
      throw new ContextOverflowError({
        reason: 'summary-overflow',
        message: `the summary request itself overflowed the context: ${classified.error.message}`,
      })
    }
    if (classified.kind !== 'retryable') throw new CompactionFailedError(classified.error)
    const plan = planRetry({ attempt: input.attempt, headers: classified.headers, waitedMs: input.waitedMs, options: retryOptionsFor(failure, scope.config.retry) })
    if (plan.action === 'retry') throw new CompactionFailedError(classified.error, plan.delayMs)
    throw new CompactionFailedError(new RetriesExhaustedError({ reason: plan.reason, attempts: input.attempt, lastError: classified.error }).toJSON())
  }
  scope.addSummary(text.trim(), true)
}
