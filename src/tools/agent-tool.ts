/**
 * `agentTool`: a tool whose call is a sub-agent, run as a child turn of the calling turn (run
 * trees). The child is a full turn in a child session of the same engine: its own chart,
 * retries, compaction and approvals; its final text is the call's output, and a child that
 * fails or is aborted makes the call an error part (the parent decides what to do next).
 */
import type { FlexibleSchema, Tool } from 'ai'
import { ChildTurnError, InvalidArgumentError } from '../core/errors'
import type { StopCondition } from '../core/types'
import { childTurnsOf } from './child-turns'
import { configureTool } from './tool-options'

export interface AgentToolOptions<INPUT> {
  /** What the parent's model reads about the sub-agent. */
  description: string
  /** The call's input (a zod schema or `jsonSchema(...)`), as `tool()` takes it. */
  inputSchema: FlexibleSchema<INPUT>
  /** The child's system prompt (default: the engine's). */
  system?: string
  /** A model registered on the engine, by name (default: the engine's `default`). */
  model?: string
  /** Tools registered on the engine, by name, the child may use (default: all of them). */
  tools?: string[]
  /** When the child stops calling the model (default: the engine's `stopWhen`). Kept in memory, like a prompt's. */
  stopWhen?: StopCondition | StopCondition[]
  /** The child's user input from the call's input (default: the input as JSON). */
  toPrompt?: (input: INPUT) => string | Promise<string>
}

/**
 * A tool that runs a sub-agent as a child turn. Register it with the engine's tools; the
 * child's text is the tool's output.
 *
 * @example
 * const research = agentTool({
 *   description: 'Research a question and answer it in a paragraph',
 *   inputSchema: z.object({ question: z.string() }),
 *   system: 'You are a careful researcher.',
 *   tools: ['search'],
 *   toPrompt: ({ question }) => question,
 * })
 * const engine = await createEngine({ database, model, tools: { research, search } })
 */
export function agentTool<INPUT>(options: AgentToolOptions<INPUT>): Tool<INPUT, string> {
  if (typeof options !== 'object' || options === null) throw new InvalidArgumentError('options', options, 'an object like { description, inputSchema }')
  const { description, inputSchema, system, model, tools, stopWhen, toPrompt } = options
  if (typeof description !== 'string') throw new InvalidArgumentError('options.description', description, 'a string')
  if (inputSchema === undefined || inputSchema === null) throw new InvalidArgumentError('options.inputSchema', inputSchema, 'a schema (zod, or jsonSchema(...))')
  if (system !== undefined && typeof system !== 'string') throw new InvalidArgumentError('options.system', system, 'a string')
  if (model !== undefined && typeof model !== 'string') throw new InvalidArgumentError('options.model', model, 'the name of a model registered on the engine')
  if (tools !== undefined && (!Array.isArray(tools) || tools.some((t) => typeof t !== 'string'))) {
    throw new InvalidArgumentError('options.tools', tools, 'an array of names of tools registered on the engine')
  }
  if (toPrompt !== undefined && typeof toPrompt !== 'function') throw new InvalidArgumentError('options.toPrompt', toPrompt, 'a function of the input')
  const definition = {
    description,
    inputSchema,
    execute: async (input: INPUT, callOptions: { toolCallId: string; abortSignal?: AbortSignal }): Promise<string> => {
      const runner = childTurnsOf(callOptions)
      if (!runner) throw new Error('agentTool runs only as a tool of a turnchart engine (no child turn runner in its call options)')
      const prompt = toPrompt ? await toPrompt(input) : JSON.stringify(input)
      if (typeof prompt !== 'string') throw new InvalidArgumentError('toPrompt(input)', prompt, 'a string')
      const result = await runner.run({
        callId: callOptions.toolCallId,
        prompt,
        options: { ...(model !== undefined ? { model } : {}), ...(tools ? { tools: [...tools] } : {}), ...(system !== undefined ? { system } : {}), ...(stopWhen ? { stopWhen } : {}) },
        signal: callOptions.abortSignal ?? new AbortController().signal,
      })
      if (result.outcome === 'completed') return result.text
      throw new ChildTurnError(result)
    },
  } as unknown as Tool<INPUT, string>
  // Idempotent: a call a crash interrupted runs again, finds its child by call id and waits for it.
  return configureTool(definition, { idempotent: true })
}
