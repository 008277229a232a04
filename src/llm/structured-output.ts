/**
 * Structured output: a turn's final answer parsed and checked with the AI SDK's output
 * specification (`Output.object({ schema })`, its own `parseCompleteOutput`, so a schema is
 * judged exactly as `streamText` judges it), and the reasons of a refusal in words the model
 * can act on. The step gate asks; this module only parses (no I/O).
 */
import { safeMessage, type SerializedError } from '../core/errors'
import type { StructuredOutput } from '../core/types'

/** A final answer checked: the parsed object, or why it does not match (with the AI SDK's `NoObjectGeneratedError` record). */
export type OutputCheck = { ok: true; value: unknown } | { ok: false; text: string; reasons: string[]; error: SerializedError }

/**
 * Parses `text` with `output` (the AI SDK's `parseCompleteOutput`).
 *
 * @example
 * await checkOutput(Output.object({ schema: z.object({ city: z.string() }) }), '{"city":1}')
 * // { ok: false, reasons: ['city: Invalid input: expected string, received number'], ... }
 */
export async function checkOutput(output: StructuredOutput, text: string, finishReason: string): Promise<OutputCheck> {
  try {
    const context = { response: { id: '', timestamp: new Date(), modelId: '' }, usage: {}, finishReason }
    return { ok: true, value: await output.parseCompleteOutput({ text }, context as Parameters<StructuredOutput['parseCompleteOutput']>[1]) }
  } catch (error) {
    return { ok: false, text, reasons: reasonsOf(error), error: recordOf(error) }
  }
}

/**
 * Why an answer was refused: each schema issue as `path: message` (zod and any Standard Schema
 * give issues), else the parser's message (not JSON at all).
 */
function reasonsOf(error: unknown): string[] {
  const cause = (error as { cause?: { name?: string; message?: string; cause?: unknown } } | null)?.cause
  const issues = (cause?.cause as { issues?: Array<{ path?: Array<PropertyKey | { key: PropertyKey }>; message?: string }> } | undefined)?.issues
  if (Array.isArray(issues) && issues.length > 0) {
    return issues.map((issue) => {
      const path = (issue.path ?? []).map((key) => String(typeof key === 'object' ? key.key : key)).join('.')
      return `${path || '(the answer)'}: ${issue.message ?? 'invalid'}`
    })
  }
  if (cause?.name === 'AI_JSONParseError') {
    const detail = (cause.cause as { message?: string } | undefined)?.message
    return [`the answer is not JSON${detail ? `: ${detail}` : ''}`]
  }
  return [cause?.message ?? (error instanceof Error ? error.message : String(error))]
}

/** The AI SDK's error as a record (`AI_NoObjectGeneratedError`, its cause's name and message): the stored form of an error of another library. */
function recordOf(error: unknown): SerializedError {
  const { name, cause } = (error ?? {}) as { name?: unknown; cause?: unknown }
  const record: SerializedError = { name: typeof name === 'string' ? name : 'Error', message: safeMessage(error) }
  if (cause !== undefined) record.cause = { name: (cause as { name?: unknown }).name ?? 'Error', message: safeMessage(cause) }
  return record
}

/** The user message that sends a refused answer back to the model (its one retry). */
export function askAgainText(reasons: string[]): string {
  return `Your final answer does not match the required output schema: ${reasons.join('; ')}. Answer again with only the JSON value that matches the schema, and no other text.`
}
