/**
 * Per-turn call options: which registered model and tools a turn uses, its system prompt and
 * its call settings, resolved from the engine's defaults, the session's defaults and the
 * prompt's options (in that order, later wins). What is resolved is stored with the turn
 * (never the headers, which may carry secrets), so a recovered turn resumes with the same ones.
 */
import type { JSONValue, ToolSet } from 'ai'
import type { ResolvedConfig } from '../config/resolve-config'
import { InvalidArgumentError } from '../core/errors/errors'

/** The AI SDK's call settings, as `streamText` takes them. */
export interface CallSettings {
  temperature?: number
  /** Default: `limits.output` when set. */
  maxOutputTokens?: number
  topP?: number
  topK?: number
  seed?: number
  stopSequences?: string[]
  presencePenalty?: number
  frequencyPenalty?: number
  /** Extra HTTP headers of the model requests. Kept in memory only: a turn recovered by another process runs without them. */
  headers?: Record<string, string>
  /** Provider-specific options, e.g. `{ openai: { reasoningEffort: 'low' } }`. */
  providerOptions?: Record<string, Record<string, JSONValue>>
}

/** `'auto'` (default), `'none'`, `'required'`, or one tool by name. */
export type ToolChoiceOption = 'auto' | 'none' | 'required' | { type: 'tool'; toolName: string }

/** Call settings plus the turn's tool choice and step limit. */
export interface TurnSettings extends CallSettings {
  toolChoice?: ToolChoiceOption
  /** Steps (LLM calls) one turn may make; a turn whose last allowed step still calls tools fails with `StepLimitError`. */
  maxSteps?: number
}

/** Options of `engine.prompt`, flat as `streamText` takes them. */
export interface PromptOptions extends TurnSettings {
  /** A model registered in `models` (default: the session's, else `'default'`). */
  model?: string
  /** System prompt of this turn (default: the session's, else the engine's). */
  system?: string
  /** Names of registered tools this turn may use (default: the session's, else all). */
  tools?: string[]
}

/** Defaults of a session's turns: `engine.createSession({ title, system, model, tools, settings })`. Stored. */
export interface SessionDefaults {
  system?: string
  model?: string
  tools?: string[]
  /** Call settings and `toolChoice` (not `headers`: they are never stored; `maxSteps` is per engine and per prompt). */
  settings?: Omit<TurnSettings, 'headers' | 'maxSteps'>
}

/** What is stored with a turn: names and JSON only. */
export interface StoredTurnOptions {
  model: string
  system?: string
  /** Tool names; absent: every registered tool. */
  tools?: string[]
  settings: Omit<TurnSettings, 'headers' | 'maxSteps'>
}

export interface ResolvedTurnOptions {
  stored: StoredTurnOptions
  headers?: Record<string, string>
  maxSteps: number | undefined
}

const numberSettings = ['temperature', 'topP', 'presencePenalty', 'frequencyPenalty'] as const
const integerSettings = ['maxOutputTokens', 'topK', 'maxSteps'] as const
const turnSettingKeys = [...numberSettings, ...integerSettings, 'seed', 'stopSequences', 'headers', 'providerOptions', 'toolChoice'] as const
const promptKeys = [...turnSettingKeys, 'model', 'system', 'tools']

function isPlainObject(value: unknown): value is Record<string, unknown> {
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

const argumentError = (name: string, value: unknown, expected: string) => new InvalidArgumentError(name, value, expected)

function checkNames(config: ResolvedConfig, where: string, model: unknown, tools: unknown, system: unknown): void {
  if (model !== undefined && (typeof model !== 'string' || !(model in config.models))) {
    throw new InvalidArgumentError(`${where}.model`, model, `the name of a registered model (${Object.keys(config.models).join(', ')})`)
  }
  if (tools !== undefined) {
    if (!Array.isArray(tools)) throw new InvalidArgumentError(`${where}.tools`, tools, 'an array of tool names')
    for (const name of tools) {
      if (typeof name !== 'string' || !(name in config.tools)) {
        throw new InvalidArgumentError(`${where}.tools`, name, `the name of a registered tool (${Object.keys(config.tools).join(', ') || 'none registered'})`)
      }
    }
  }
  if (system !== undefined && typeof system !== 'string') throw new InvalidArgumentError(`${where}.system`, system, 'a string')
}

/**
 * Validates `createSession`'s defaults (the names must be registered on the engine).
 *
 * @example
 * validateSessionDefaults(config, { model: 'fast', tools: ['search'], settings: { temperature: 0 } })
 */
export function validateSessionDefaults(config: ResolvedConfig, defaults: SessionDefaults): void {
  checkNames(config, 'session', defaults.model, defaults.tools, defaults.system)
  if (defaults.settings !== undefined) {
    if (!isPlainObject(defaults.settings)) throw new InvalidArgumentError('session.settings', defaults.settings, 'an object')
    if ('maxSteps' in defaults.settings) {
      throw new InvalidArgumentError('session.settings.maxSteps', (defaults.settings as { maxSteps?: unknown }).maxSteps, 'no maxSteps: it is set on the engine or per prompt')
    }
    if ('headers' in defaults.settings) {
      throw new InvalidArgumentError('session.settings.headers', '(headers)', 'no headers: they are never stored; pass them per prompt or set them on the provider')
    }
    validateTurnSettings('session.settings', defaults.settings, argumentError)
  }
}

/**
 * The options of one turn: engine defaults, then the session's, then the prompt's.
 *
 * @example
 * const { stored, headers, maxSteps } = resolveTurnOptions(config, session.defaults, { model: 'fast', temperature: 0 })
 */
export function resolveTurnOptions(config: ResolvedConfig, defaults: SessionDefaults | undefined, options: PromptOptions | undefined): ResolvedTurnOptions {
  const prompt = options ?? {}
  if (!isPlainObject(prompt as unknown)) throw new InvalidArgumentError('options', prompt, 'an object')
  for (const key of Object.keys(prompt)) {
    if (!promptKeys.includes(key)) throw new InvalidArgumentError(`options.${key}`, (prompt as Record<string, unknown>)[key], `one of ${promptKeys.join(', ')} (unknown option)`)
  }
  checkNames(config, 'options', prompt.model, prompt.tools, prompt.system)
  const { model, system, tools, headers, maxSteps, ...settings } = prompt
  validateTurnSettings('options', { ...settings, ...(headers ? { headers } : {}), ...(maxSteps !== undefined ? { maxSteps } : {}) }, argumentError)
  const sessionSettings = defaults?.settings ?? {}
  const { headers: engineHeaders, ...engineSettings } = config.call
  const chosenTools = tools ?? defaults?.tools
  const chosenSystem = system ?? defaults?.system ?? config.system
  const merged = { ...engineSettings, ...sessionSettings, ...settings }
  const toolChoice = merged.toolChoice
  if (toolChoice && typeof toolChoice === 'object' && !(chosenTools ?? Object.keys(config.tools)).includes(toolChoice.toolName)) {
    throw new InvalidArgumentError('options.toolChoice', toolChoice, 'a tool this turn may use')
  }
  const allHeaders = { ...engineHeaders, ...headers }
  return {
    stored: {
      model: model ?? defaults?.model ?? 'default',
      ...(chosenSystem !== undefined ? { system: chosenSystem } : {}),
      ...(chosenTools ? { tools: [...chosenTools] } : {}),
      settings: merged,
    },
    ...(Object.keys(allHeaders).length ? { headers: allHeaders } : {}),
    maxSteps: maxSteps ?? config.maxSteps,
  }
}

/**
 * The configuration a turn runs with: the engine's, with the turn's model, system prompt,
 * tools and call settings. Throws `InvalidArgumentError` when a stored name is no longer
 * registered (a recovered turn then ends as failed, saying so).
 *
 * @example
 * const scopeConfig = turnConfig(config, stored, headers)
 */
export function turnConfig(config: ResolvedConfig, stored: StoredTurnOptions | null | undefined, headers?: Record<string, string>): ResolvedConfig {
  if (!stored) return config
  const model = config.models[stored.model]
  if (!model) throw new InvalidArgumentError('model', stored.model, `the name of a registered model (${Object.keys(config.models).join(', ')})`)
  let tools: ToolSet = config.tools
  if (stored.tools) {
    tools = {}
    for (const name of stored.tools) {
      if (!(name in config.tools)) throw new InvalidArgumentError('tools', name, `the name of a registered tool (${Object.keys(config.tools).join(', ')})`)
      tools[name] = config.tools[name]
    }
  }
  return { ...config, model, system: stored.system, tools, call: { ...stored.settings, ...(headers ? { headers } : {}) } }
}
