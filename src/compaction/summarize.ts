/**
 * Compaction: asks the model for a summary of the history and stores it as a summary message
 * (a `compaction` part and the summary text). The model is sent only what follows the latest
 * summary from then on.
 */
import { CompactionFailedError, ContextOverflowError } from '../errors'
import { startIdleTimer } from '../llm/idle-timer'
import { modelStream } from '../llm/model-stream'
import { classifyError } from '../policy/classify-error'
import type { TurnScope } from '../turn/turn-scope'

/**
 * Summarises the turn's history. Rejects with `ContextOverflowError` when the summary request
 * itself overflows (no endless compaction loop), or with the classified provider error.
 *
 * @example
 * await summarize(scope, signal)
 */
export async function summarize(scope: TurnScope, signal: AbortSignal): Promise<void> {
  let failure: unknown
  let text = ''
  // The summary request gets the same idle timeout as a step: a silent stream cannot hang the turn.
  const controller = new AbortController()
  const abortFromOutside = () => controller.abort(signal.reason)
  signal.addEventListener('abort', abortFromOutside, { once: true })
  const idle = startIdleTimer(controller, scope.config.streamIdleTimeoutMs)
  try {
    const events = modelStream({
      model: scope.config.model,
      system: scope.config.system,
      messages: [...scope.modelMessages(), { role: 'user', content: scope.config.compaction.prompt }],
      abortSignal: controller.signal,
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
    signal.removeEventListener('abort', abortFromOutside)
  }
  if (signal.aborted) throw signal.reason
  if (controller.signal.aborted) failure = controller.signal.reason
  if (failure !== undefined) {
    const classified = classifyError(failure)
    if (classified.kind === 'overflow') {
      throw new ContextOverflowError({
        reason: 'summary-overflow',
        message: `the summary request itself overflowed the context: ${classified.error.message}`,
      })
    }
    throw new CompactionFailedError(classified.error)
  }
  scope.addSummary(text.trim(), true)
}
