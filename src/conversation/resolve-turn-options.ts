/**
 * Per-turn call options: which registered model and tools a turn uses, its system prompt and
 * its call settings, resolved from the engine's defaults, the session's defaults and the
 * prompt's options (in that order, later wins). What is resolved is stored with the turn
 * (never the headers, which may carry secrets), so a recovered turn resumes with the same ones.
 */
import type { ToolSet } from 'ai'
import type { ResolvedConfig } from '../config/resolved-config'
import type { TurnConfig, TurnServices } from '../turn/turn-config'
import type { NamedModel } from '../llm/model-fallback'
import { InvalidArgumentError } from '../core/errors'
import type { PromptOptions, SessionDefaults, StopCondition, StoredTurnOptions, StructuredOutput } from '../core/types'
import { isPlainObject, promptKeys, stopConditions, structuredOutput, validateTurnSettings } from '../config/call-settings'
import { mergeBudgets, validateBudget } from '../policy/budget'
import { pickTools } from '../tools/tool-fingerprint'

export interface ResolvedTurnOptions {
  stored: StoredTurnOptions
  /** What the turn runs with but is never stored: headers (they may carry credentials), the prompt's stop conditions and structured output (functions). */
  memory: TurnMemoryOptions
  maxSteps: number | undefined
}

/** A turn's options kept in memory only: a turn another process recovers runs without them (its engine's stop conditions apply). */
export interface TurnMemoryOptions {
  headers?: Record<string, string>
  stopWhen?: StopCondition[]
  /** The prompt's structured output (a schema's functions: never stored). */
  output?: StructuredOutput
}

const argumentError = (name: string, value: unknown, expected: string) => new InvalidArgumentError(name, value, expected)

/** What an unknown option's message lists: every option `prompt()` takes, `whenBusy` and `abortSignal` too (the engine reads them before the options get here). */
const promptOptionNames = [...promptKeys, 'whenBusy', 'abortSignal']

/**
 * Options of the AI SDK's `streamText` that a prompt does not take, each with what does its job
 * in a turn: the refusal says where to go instead of only "unknown option".
 */
const aiSdkEquivalents: Record<string, string> = {
  maxRetries: "no maxRetries: a turn's retries are the engine's retry options (createEngine({ retry: { maxAttempts } }))",
  activeTools: "no activeTools: the prompt's tools option (names of registered tools) chooses the tools a turn may call",
  prepareStep: "no prepareStep: a turn's steps are the chart's; decide per step with the step gate's rules (the engine option stepRules: [{ name, decide({ stepNumber, steps }) }], which may complete or fail the turn), or per turn with the prompt's options (model, system, tools, settings)",
  onFinish: 'no onFinish: await turn.done (outcome, usage, error), or engine.subscribe (a turn.transition into completed, failed or aborted)',
  onStepFinish: "no onStepFinish: engine.subscribe (turn.transition, part.updated) or turn.fullStream",
  onChunk: 'no onChunk: turn.fullStream, or engine.subscribe (part.delta)',
  onError: "no onError: a turn's failure is turn.done's error (and a session.error event)",
  experimental_output: 'no experimental_output: its successor is the prompt option output (Output.object({ schema }) from ai); turn.done.output is the parsed object',
  experimental_telemetry: 'no experimental_telemetry: the engine makes its own spans (createEngine({ telemetry: { tracer } }), docs/telemetry.md)',
  prompt: 'no prompt option: the prompt is the second argument of engine.prompt(sessionId, input)',
  messages: "no messages: a session's history is stored; prompt with the new user message (engine.fork or engine.revert change the history)",
}

/** A model's name, or a list of names (fallback models): each registered, none twice, the list not empty. */
function checkModels(config: ResolvedConfig, where: string, model: unknown): void {
  if (model === undefined) return
  const registered = `the name of a registered model (${Object.keys(config.models).join(', ')})`
  const names = Array.isArray(model) ? model : [model]
  if (names.length === 0) throw new InvalidArgumentError(`${where}.model`, model, `${registered}, or a non-empty list of such names`)
  for (const name of names) {
    if (typeof name !== 'string' || !Object.hasOwn(config.models, name)) throw new InvalidArgumentError(`${where}.model`, name, registered)
  }
  if (new Set(names).size !== names.length) throw new InvalidArgumentError(`${where}.model`, model, 'a list of models that names each once')
}

/** The first model's name and the fallbacks after it. */
function modelList(model: string | string[]): { model: string; fallbacks?: string[] } {
  const [first, ...rest] = Array.isArray(model) ? model : [model]
  return { model: first, ...(rest.length ? { fallbacks: rest } : {}) }
}

function checkNames(config: ResolvedConfig, where: string, model: unknown, tools: unknown, system: unknown): void {
  checkModels(config, where, model)
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
  if (defaults.budget !== undefined) validateBudget('session.budget', defaults.budget, argumentError)
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
 * const { stored, memory, maxSteps } = resolveTurnOptions(config, session.defaults, { model: 'fast', temperature: 0 })
 */
export function resolveTurnOptions(config: ResolvedConfig, defaults: SessionDefaults | undefined, options: PromptOptions | undefined): ResolvedTurnOptions {
  const prompt = options ?? {}
  if (!isPlainObject(prompt as unknown)) throw new InvalidArgumentError('options', prompt, 'an object')
  for (const key of Object.keys(prompt)) {
    if (promptKeys.includes(key)) continue
    const value = (prompt as Record<string, unknown>)[key]
    if (Object.hasOwn(aiSdkEquivalents, key)) throw new InvalidArgumentError(`options.${key}`, value, aiSdkEquivalents[key])
    throw new InvalidArgumentError(`options.${key}`, value, `one of ${promptOptionNames.join(', ')} (unknown option)`)
  }
  checkNames(config, 'options', prompt.model, prompt.tools, prompt.system)
  const { model, system, tools, headers, maxSteps, stopWhen, budget: promptBudget, output, ...settings } = prompt
  if (promptBudget !== undefined) validateBudget('options.budget', promptBudget, argumentError)
  const budget = mergeBudgets(config.budget, defaults?.budget, promptBudget)
  const promptStops = stopWhen === undefined ? undefined : stopConditions('options.stopWhen', stopWhen, argumentError)
  const promptOutput = structuredOutput('options.output', output, argumentError)
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
  const models = modelList(model ?? defaults?.model ?? config.defaultModels ?? 'default')
  // (a name registered on no engine is refused when the turn is configured)
  const modelId = Object.hasOwn(config.models, models.model) ? config.models[models.model].modelId : undefined
  return {
    stored: {
      ...models,
      ...(chosenSystem !== undefined ? { system: chosenSystem } : {}),
      ...(chosenTools ? { tools: [...chosenTools] } : {}),
      settings: merged,
      ...(budget ? { budget } : {}),
      ...(config.toolFingerprint ? { toolFingerprint: pickTools(config.toolFingerprint, chosenTools) } : {}),
      // What engine.upgradeCheck() compares with the engine's model of that name.
      ...(typeof modelId === 'string' ? { modelId } : {}),
    },
    memory: { ...(Object.keys(allHeaders).length ? { headers: allHeaders } : {}), ...(promptStops ? { stopWhen: promptStops } : {}), ...(promptOutput ? { output: promptOutput } : {}) },
    maxSteps: maxSteps ?? config.maxSteps,
  }
}

/** The turn's stored models by name, its first and its fallbacks; a name no longer registered is refused. */
function storedModels(config: ResolvedConfig, stored: StoredTurnOptions): NamedModel[] {
  return [stored.model, ...(stored.fallbacks ?? [])].map((name) => {
    if (!Object.hasOwn(config.models, name)) throw new InvalidArgumentError('model', name, `the name of a registered model (${Object.keys(config.models).join(', ')})`)
    return { name, model: config.models[name] }
  })
}

/**
 * The configuration a turn runs with: the engine's limits and policies and its services, with
 * the turn's model, system prompt, tools and call settings (the engine's when none were
 * stored: a turn of a version before they were). Throws `InvalidArgumentError` when a stored
 * name is no longer registered (a recovered turn then ends as failed, saying so).
 *
 * @example
 * const config = turnConfig(engineConfig, services, stored, { headers })
 */
export function turnConfig(config: ResolvedConfig, services: TurnServices, stored: StoredTurnOptions | null | undefined, memory: TurnMemoryOptions = {}): TurnConfig {
  const { headers } = memory
  const engine: TurnConfig = {
    model: config.model,
    modelName: config.defaultModels?.[0] ?? 'default',
    system: config.system,
    tools: config.tools,
    editableApprovals: config.editableApprovals,
    approvalTimeoutMs: config.approvalTimeoutMs,
    call: config.call,
    limits: config.limits,
    compaction: { reserved: config.compaction.reserved, prompt: config.compaction.prompt },
    toolExecution: config.toolExecution,
    doomLoop: config.doomLoop,
    streamIdleTimeoutMs: config.streamIdleTimeoutMs,
    pricing: config.pricing,
    stopWhen: memory.stopWhen ?? config.stopWhen,
    stepRules: config.stepRules,
    ...(memory.output ?? config.output ? { output: memory.output ?? config.output } : {}),
    ...(config.budget ? { budget: config.budget } : {}),
    ...services,
  }
  if (!stored) return engine
  const named = storedModels(config, stored)
  const model = named[0].model
  let tools: ToolSet = config.tools
  if (stored.tools) {
    tools = {}
    for (const name of stored.tools) {
      if (!(name in config.tools)) {
        // A tool the turn pinned and the engine no longer has: its calls become an error part naming it (run-tools), the turn goes on.
        if (stored.toolFingerprint && Object.hasOwn(stored.toolFingerprint, name)) continue
        throw new InvalidArgumentError('tools', name, `the name of a registered tool (${Object.keys(config.tools).join(', ')})`)
      }
      tools[name] = config.tools[name]
    }
  }
  return {
    ...engine,
    model,
    modelName: named[0].name,
    ...(named.length > 1 ? { models: named } : {}),
    system: stored.system,
    tools,
    call: { ...stored.settings, ...(headers ? { headers } : {}) },
    ...(stored.budget ? { budget: stored.budget } : {}),
    ...(stored.toolFingerprint && config.toolFingerprint ? { pinnedTools: { pinned: stored.toolFingerprint, current: config.toolFingerprint } } : {}),
  }
}
