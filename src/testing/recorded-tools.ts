/**
 * Tools that answer with the results a stored turn recorded instead of running: each call gets
 * the recorded result of the same tool and input (the same call id first, else the first unused
 * one), a recorded error as the same error; a call with an input the recording never called the
 * tool with gets `NoRecordedResultError`, never another input's result. Calls
 * the recording decided on (approved or denied) ask for approval again, so the decision can be
 * replayed.
 */
import { jsonSchema, tool, type ToolSet } from 'ai'
import { canonicalJson } from '../core/input-digest'
import type { ToolPart } from '../core/types'
import type { RecordedTurn } from './recorded-turn'

/** A recorded tool call with no result to give: the run called a tool the recording never called so. */
export class NoRecordedResultError extends Error {
  override readonly name = 'NoRecordedResultError'
  constructor(
    readonly tool: string,
    readonly input: unknown,
  ) {
    super(`no recorded result for ${tool}(${canonicalJson(input)}): the recording never made this call (run the tools for real to answer it)`)
  }
  static isInstance(error: unknown): error is NoRecordedResultError {
    return error instanceof Error && error.name === 'NoRecordedResultError'
  }
}

/**
 * @example
 * const tools = recordedTools(recording, decisions) // { add: tool({ execute: recorded results }) }
 */
export function recordedTools(recording: RecordedTurn, decided: ReadonlySet<string>): ToolSet {
  const calls = recording.own.flatMap((m) => m.parts).filter((p): p is ToolPart => p.type === 'tool' && (p.state.status === 'completed' || p.state.status === 'error'))
  const used = new Set<ToolPart>()
  const names = recording.options?.tools ?? [...new Set(calls.map((c) => c.tool))]
  // A result answers a call of the same tool with the same input only: another model may reuse
  // a call id (`call_1`) for another input, whose recorded result would be a lie.
  const find = (name: string, callId: string, input: unknown) => {
    const key = canonicalJson(input)
    const answers = (c: ToolPart) => !used.has(c) && c.tool === name && canonicalJson(c.state.input) === key
    return calls.find((c) => c.callId === callId && answers(c)) ?? calls.find(answers)
  }
  return Object.fromEntries(
    names.map((name) => [
      name,
      tool({
        description: `${name}, answered with the recorded results`,
        // Any input: the recording's own calls were checked by the tool when they were made.
        inputSchema: jsonSchema<Record<string, unknown>>({ type: 'object', additionalProperties: true }),
        needsApproval: (_input: Record<string, unknown>, { toolCallId }: { toolCallId: string }) => decided.has(toolCallId),
        execute: async (input: Record<string, unknown>, { toolCallId }: { toolCallId: string }) => {
          const call = find(name, toolCallId, input)
          if (!call) throw new NoRecordedResultError(name, input)
          used.add(call)
          if (call.state.status === 'error') throw new Error(call.state.error)
          return call.state.status === 'completed' ? call.state.output : undefined
        },
      }),
    ]),
  )
}
