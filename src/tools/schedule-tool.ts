/**
 * `scheduleTool`: the model schedules a turn on its own session ("remind me tomorrow at 9"),
 * through the engine's schedules (docs/scheduling.md). It needs a person's approval by default.
 * Its call's idempotency key is the schedule's id: a call run again (after a crash, on another
 * engine) stores the same one schedule.
 */
import { jsonSchema, type Tool } from 'ai'
import { InvalidArgumentError } from '../core/errors'
import { callInfo, type CallSchedule } from './call-info'
import { configureTool } from './tool-options'

/** The input the model gives: the prompt, and one of a time, an interval or a cron expression. */
interface ScheduleToolInput {
  prompt: string
  at?: string
  everyMinutes?: number
  cron?: string
  timezone?: string
}

const inputSchema = jsonSchema<ScheduleToolInput>({
  type: 'object',
  properties: {
    prompt: { type: 'string', description: 'What to do then, written as the user would ask it' },
    at: { type: 'string', description: 'When, once: an ISO 8601 date and time with its offset, e.g. 2026-12-08T09:00:00+01:00' },
    everyMinutes: { type: 'number', description: 'Or: every this many minutes, from now' },
    cron: { type: 'string', description: "Or: a cron expression, e.g. '0 9 * * 1' for Mondays at 9:00" },
    timezone: { type: 'string', description: "With cron: the IANA time zone, e.g. 'Europe/Berlin'" },
  },
  required: ['prompt'],
  additionalProperties: false,
})

/**
 * A tool that lets the model schedule a follow-up turn on its own session. Register it with the
 * engine's tools. `needsApproval` (default true): a person approves each schedule first.
 *
 * @example
 * const engine = await createEngine({ database, model, tools: { remind: scheduleTool() } })
 */
export function scheduleTool(options: { description?: string; needsApproval?: boolean } = {}): Tool<ScheduleToolInput, string> {
  if (typeof options !== 'object' || options === null) throw new InvalidArgumentError('options', options, 'an object like { needsApproval: true }')
  const definition = {
    description: options.description ?? 'Schedule a follow-up: a prompt this conversation gets at a time, every few minutes, or on a cron expression',
    inputSchema,
    needsApproval: options.needsApproval ?? true,
    execute: async (input: ScheduleToolInput, callOptions: { toolCallId: string }): Promise<string> => {
      const { schedule } = callInfo(callOptions)
      if (!schedule) throw new Error('scheduleTool runs only as a tool of a turnchart engine whose store keeps schedules')
      const { id, next } = await schedule(callScheduleOf(input))
      return next === null ? `scheduled (${id}); nothing more to come` : `scheduled (${id}); next at ${new Date(next).toISOString()}`
    },
  }
  // (idempotent: a call run again stores the schedule of the same id, the same one)
  return configureTool(definition as unknown as Tool<ScheduleToolInput, string>, { idempotent: true })
}

/** The model's input as the engine's schedule takes it (a time in ISO 8601, minutes as milliseconds). */
function callScheduleOf(input: ScheduleToolInput): CallSchedule {
  const at = input.at === undefined ? undefined : Date.parse(input.at)
  if (at !== undefined && Number.isNaN(at)) throw new InvalidArgumentError('at', input.at, 'an ISO 8601 date and time')
  return {
    input: input.prompt,
    ...(at !== undefined ? { at } : {}),
    ...(input.everyMinutes !== undefined ? { every: Math.round(input.everyMinutes * 60_000) } : {}),
    ...(input.cron !== undefined ? { cron: input.cron } : {}),
    ...(input.timezone !== undefined ? { timezone: input.timezone } : {}),
  }
}
