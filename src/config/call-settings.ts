/**
 * Call settings (temperature, maxOutputTokens, headers, toolChoice, …) checked wherever they
 * are given: the engine's `settings`, a session's defaults, a prompt's options.
 */
import type { StopCondition, StructuredOutput } from '../core/types'
const numberSettings = ['temperature', 'topP', 'presencePenalty', 'frequencyPenalty'] as const
const integerSettings = ['maxOutputTokens', 'topK', 'maxSteps'] as const
export const turnSettingKeys = [...numberSettings, ...integerSettings, 'seed', 'stopSequences', 'headers', 'providerOptions', 'toolChoice'] as const
export const promptKeys = [...turnSettingKeys, 'model', 'system', 'tools', 'stopWhen', 'budget', 'output']

/**
 * `output`: the AI SDK's `Output.object({ schema })` (anything with `responseFormat` and
 * `parseCompleteOutput`), or undefined. Throws `make(...)` naming the option.
 */
export function structuredOutput(name: string, value: unknown, make: (name: string, value: unknown, expected: string) => Error): StructuredOutput | undefined {
  if (value === undefined) return undefined
  const spec = value as Partial<StructuredOutput> | null
  if (typeof spec !== 'object' || spec === null || typeof spec.parseCompleteOutput !== 'function' || !spec.responseFormat || typeof (spec.responseFormat as PromiseLike<unknown>).then !== 'function') {
    throw make(name, value, "an output specification of the AI SDK (Output.object({ schema }) from 'ai')")
  }
  return spec as StructuredOutput
}

/**
 * `stopWhen`: a stop condition or an array of them (functions), as a list. Throws `make(...)`
 * naming the option (`stopWhen`, `options.stopWhen[1]`).
 */
export function stopConditions(name: string, value: unknown, make: (name: string, value: unknown, expected: string) => Error): StopCondition[] {
  if (value === undefined) return []
  const list = Array.isArray(value) ? value : [value]
  list.forEach((condition, i) => {
    if (typeof condition !== 'function') {
      throw make(Array.isArray(value) ? `${name}[${i}]` : name, condition, 'a stop condition (a function of the steps, e.g. stepCountIs(5) or hasToolCall(name) from ai)')
    }
  })
  return list as StopCondition[]
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/**
 * Checks call settings; `where` prefixes the names in errors (`options`, `settings`).
 * Throws `InvalidArgumentError` (or `make(...)` for engine options) naming the setting.
 *
 * @example
 * validateTurnSettings('options', { temperature: 0.2, maxSteps: 10 }, (name, value, expected) => new InvalidArgumentError(name, value, expected))
 */
export function validateTurnSettings(
  where: string,
  value: Record<string, unknown>,
  make: (name: string, value: unknown, expected: string) => Error,
  extraKeys: readonly string[] = [],
): void {
  for (const [key, v] of Object.entries(value)) {
    const name = `${where}.${key}`
    if (v === undefined) continue
    if (!(turnSettingKeys as readonly string[]).includes(key) && !extraKeys.includes(key)) {
      throw make(name, v, `one of ${[...turnSettingKeys, ...extraKeys].join(', ')} (unknown option)`)
    }
    if ((numberSettings as readonly string[]).includes(key) && (typeof v !== 'number' || !Number.isFinite(v))) throw make(name, v, 'a finite number')
    if ((integerSettings as readonly string[]).includes(key) && (typeof v !== 'number' || !Number.isInteger(v) || v < 1)) throw make(name, v, 'an integer >= 1')
    if (key === 'seed' && (typeof v !== 'number' || !Number.isInteger(v))) throw make(name, v, 'an integer')
    if (key === 'stopSequences' && (!Array.isArray(v) || v.some((s) => typeof s !== 'string'))) throw make(name, v, 'an array of strings')
    if (key === 'headers' && (!isPlainObject(v) || Object.values(v).some((h) => typeof h !== 'string'))) throw make(name, v, 'an object of strings')
    if (key === 'providerOptions' && (!isPlainObject(v) || Object.values(v).some((o) => !isPlainObject(o)))) throw make(name, v, 'an object of objects, by provider')
    if (key === 'toolChoice') {
      const ok = v === 'auto' || v === 'none' || v === 'required' || (isPlainObject(v) && v.type === 'tool' && typeof v.toolName === 'string')
      if (!ok) throw make(name, v, "'auto', 'none', 'required' or { type: 'tool', toolName }")
    }
  }
}

