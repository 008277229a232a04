/**
 * A turn's finished steps as the AI SDK's stop conditions read them (`StopConditionStep`),
 * built from the parts the turn stored: for each step its last attempt (a failed attempt's
 * parts stay stored, closed, and are not part of the step's result).
 */
import type { MessageWithParts, Part, StopConditionStep, ToolPart } from '../core/types'

/**
 * The results of steps `from` to `to` (1-based, across the turn) among `parts`; a step with no
 * part (it failed before any) is left out.
 *
 * @example
 * const steps = stepResults(scope.messages.assistantMessages().flatMap((m) => m.parts), 1, 3)
 */
export function stepResults(parts: readonly Part[], from: number, to: number): StopConditionStep[] {
  const byStep = new Map<number, Part[]>()
  for (const part of parts) {
    const step = part.step ?? 0
    if (step < from || step > to) continue
    const list = byStep.get(step)
    if (list) list.push(part)
    else byStep.set(step, [part])
  }
  const results: StopConditionStep[] = []
  for (let step = from; step <= to; step++) {
    const all = byStep.get(step)
    if (!all) continue
    const attempt = Math.max(...all.map((p) => p.attempt ?? 0))
    results.push(resultOf(step, all.filter((p) => (p.attempt ?? 0) === attempt)))
  }
  return results
}

/**
 * A running turn's step results, each step converted once: a boundary reads only the messages
 * that hold steps not converted yet.
 */
export class StepResultsSoFar {
  readonly #results: StopConditionStep[] = []
  #converted = 0

  /** The turn's finished steps up to `step`, among its assistant messages (read only when a step is new). */
  upTo(step: number, assistantMessages: () => readonly MessageWithParts[]): StopConditionStep[] {
    if (step > this.#converted) {
      const fresh: Part[] = []
      for (const message of [...assistantMessages()].reverse()) {
        if (!message.parts.some((p) => (p.step ?? 0) > this.#converted)) break
        fresh.unshift(...message.parts)
      }
      this.#results.push(...stepResults(fresh, this.#converted + 1, step))
      this.#converted = step
    }
    return this.#results
  }
}

function resultOf(stepNumber: number, parts: Part[]): StopConditionStep {
  const text = parts.flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('')
  const reasoning = parts.flatMap((p) => (p.type === 'reasoning' ? [p.text] : []))
  const tools = parts.filter((p): p is ToolPart => p.type === 'tool' && p.state.status !== 'pending')
  const finish = parts.find((p) => p.type === 'step-finish')
  const tokens = finish?.type === 'step-finish' ? finish.tokens : undefined
  return {
    stepNumber,
    text,
    reasoningText: reasoning.length ? reasoning.join('') : undefined,
    toolCalls: tools.map((p) => ({ type: 'tool-call' as const, toolCallId: p.callId, toolName: p.tool, input: p.state.input })),
    toolResults: tools.flatMap((p) =>
      p.state.status === 'completed' ? [{ type: 'tool-result' as const, toolCallId: p.callId, toolName: p.tool, input: p.state.input, output: p.state.output }] : [],
    ),
    finishReason: finish?.type === 'step-finish' ? finish.reason : 'unknown',
    usage: { inputTokens: tokens?.input, outputTokens: tokens?.output, totalTokens: tokens ? tokens.input + tokens.output : undefined },
  }
}
