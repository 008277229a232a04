/**
 * `createEngine` options: their types, defaults and validation. Every invalid option fails
 * with an `InvalidOptionError` naming the option and the value.
 */
import type { LanguageModel, ToolSet } from 'ai'
import type { ActorOptions, AnyActorLogic, InspectionEvent, Observer } from 'xstate'

/** XState's clock interface (setTimeout/clearTimeout), e.g. a `SimulatedClock`. */
export type Clock = NonNullable<ActorOptions<AnyActorLogic>['clock']>
import { InvalidOptionError } from '../core/errors/errors'
import { isSupportedModel, supportedModelsText, type ProviderLanguageModel } from '../llm/language-model'
import type { Pricing } from '../llm/usage'
import { defaultDoomLoopOptions, type DoomLoopOptions } from '../policy/doom-loop'
import type { ModelLimits } from '../policy/overflow'
import { defaultFailurePolicies, type ErrorClassifier, type FailurePolicies, type RetryPolicy } from '../policy/decide-failure'
import { classifyError } from '../policy/classify-error'
import { validateRetryOptions, type RetryOptions } from '../policy/retry-delay'
import type { DatabaseOption } from '../store/open-database'
import { Telemetry, type TelemetryOptions } from '../telemetry/telemetry'
import type { TurnSettings } from '../core/types'
import { validateTurnSettings } from './call-settings'
import { maxTimerMs } from '../core/timer-limit'
import { createRedactor, minSecretLength, type Redactor } from '../security/redact-secrets'

export interface CompactionOptions {
  /** Compact automatically when the context is full. `false`: an overflow fails the turn. Default true. */
  auto?: boolean
  /** Tokens kept free for the model's answer. Default min(20000, limits.output). */
  reserved?: number
  /** At most this many compactions in one turn (guards against compaction loops). Default 2. */
  maxPerTurn?: number
  /** The instruction sent to the model to summarise the history. */
  prompt?: string
}

export interface ToolExecutionOptions {
  /** Tool calls of one step that run at once. Default 4. */
  concurrency?: number
  /** A tool run longer than this fails with a timeout error and its signal aborts. Default 300000. A tool's own `timeoutMs` (see `configureTool`) wins. */
  timeoutMs?: number
  /** Outputs larger than this (as JSON, in bytes) are truncated, saying so. Default 100000. */
  maxOutputBytes?: number
}

/**
 * A language model object of the app's `ai` major (`LanguageModelV3` with ai v6, also
 * `LanguageModelV4` with ai v7): not a model id string, not a V2 model.
 */
export type EngineModel = Exclude<LanguageModel, string | { readonly specificationVersion: 'v2' }>

export interface EngineOptions {
  /** SQLite file path, ':memory:' (default), a postgres:// URL, a Kysely instance, or a `MemoryStore` (nothing stored survives the process). */
  database?: DatabaseOption
  /** An AI SDK language model object of any provider: a `LanguageModelV3` (ai v6 providers) or a `LanguageModelV4` (ai v7 providers); the model named `'default'`. Required unless `models.default` is given. */
  model?: EngineModel
  /** Models by name, for `prompt(..., { model: 'fast' })` and `createSession({ model })`; `model` is `default`. */
  models?: Record<string, EngineModel>
  /** Default call settings of every turn (`temperature`, `maxOutputTokens`, `topP`, `topK`, `seed`, `stopSequences`, `presencePenalty`, `frequencyPenalty`, `headers`, `providerOptions`, `toolChoice`). */
  settings?: Omit<TurnSettings, 'maxSteps'>
  /** Steps (LLM calls) one turn may make. Default 100. */
  maxSteps?: number
  /** Largest file or image a prompt may carry as bytes (stored in the database). Default 10 MB. */
  maxFileBytes?: number
  /** Token limits of the model; without them overflow is detected only from provider errors. */
  limits?: ModelLimits
  /** AI SDK `tool()` definitions with `execute`. */
  tools?: ToolSet
  /** System prompt sent with every step. */
  system?: string
  /** Retry policy; see `RetryOptions`. */
  retry?: Partial<RetryOptions>
  /**
   * Replaces turnchart's error classifier (which errors are retryable, an overflow, auth, or
   * fatal). Default: `classifyError`, with its provider tables. Wrap it to add a rule.
   */
  errorClassifier?: ErrorClassifier
  /**
   * Replaces the retry policy (whether and how long to wait before another attempt). Default:
   * `planRetry` with the `retry` options.
   */
  retryPolicy?: RetryPolicy
  compaction?: CompactionOptions
  toolExecution?: ToolExecutionOptions
  /** A stream silent for this long fails the step as retryable. Default 60000. */
  streamIdleTimeoutMs?: number
  /** Streaming text is written to the database at most this often. Default 250. */
  flushIntervalMs?: number
  /** Prices per million tokens, for `cost` on messages and step-finish parts. */
  pricing?: Pricing
  /** Passed to XState's `createActor` (Stately inspector). */
  inspect?: Observer<InspectionEvent> | ((event: InspectionEvent) => void)
  /** XState clock for the retry timer; tests pass a `SimulatedClock`. */
  clock?: Clock
  /** SQLite busy timeout in ms (file databases opened by turnchart). Default 5000. */
  busyTimeoutMs?: number
  /** Called once per subscriber that throws. Default: console.error. */
  onSubscriberError?: (error: unknown) => void
  /** Doom-loop detection: repeated identical tool calls and short cycles; see docs/tools.md. */
  doomLoop?: Partial<DoomLoopOptions>
  /** What happens to turns found unfinished (a crashed process); see docs/durability.md. */
  recovery?: RecoveryOptions
  /** A running turn's lease; renewed every third of it. Another engine may take over a turn whose lease ran out. Default 30000. */
  leaseMs?: number
  /** How often an engine looks for approve/deny/abort requests other engines stored for its turns. Default 200. */
  controlPollIntervalMs?: number
  /** OpenTelemetry spans (turn, state visits, model calls, tool runs); see docs/telemetry.md. Default: the global tracer (a no-op without an SDK), no inputs or outputs recorded. */
  telemetry?: TelemetryOptions
  /** Credentials removed from every stored or published error on top of the built-in patterns; see docs/security.md. */
  redact?: RedactOptions
}

export interface RedactOptions {
  /**
   * Exact strings never stored nor published (replaced by `[redacted]`): pass the provider's
   * API key here, since turnchart cannot read it from the model. At least 6 characters each.
   */
  secrets?: string[]
}

export interface RecoveryOptions {
  /** `resume` (default) continues an interrupted turn; `abort` ends it as aborted. */
  policy?: 'resume' | 'abort'
  /** Recover when the engine opens the database. Default true. */
  onOpen?: boolean
  /** Look for turns to take over (a dead worker's) this often while the engine runs; 0: never. Default `leaseMs`. */
  intervalMs?: number
}

export interface ResolvedConfig {
  model: ProviderLanguageModel
  /** Registered models by name; `default` is `model`. */
  models: Record<string, ProviderLanguageModel>
  /** Call settings of the turn (engine defaults; per turn, the turn's). */
  call: Omit<TurnSettings, 'maxSteps'>
  maxSteps: number | undefined
  maxFileBytes: number
  limits: ModelLimits | undefined
  tools: ToolSet
  system: string | undefined
  retry: RetryOptions
  /** The error classifier and the retry policy every failed model request is decided by. */
  failure: FailurePolicies
  compaction: { auto: boolean; reserved: number | undefined; maxPerTurn: number; prompt: string }
  toolExecution: { concurrency: number; timeoutMs: number; maxOutputBytes: number }
  doomLoop: DoomLoopOptions
  streamIdleTimeoutMs: number
  flushIntervalMs: number
  pricing: Pricing | undefined
  inspect: EngineOptions['inspect']
  clock: Clock | undefined
  onSubscriberError: (error: unknown) => void
  recovery: { policy: 'resume' | 'abort'; onOpen: boolean; intervalMs: number }
  leaseMs: number
  controlPollIntervalMs: number
  telemetry: Telemetry
  /** Removes credentials (the patterns plus `redact.secrets`) from errors before they are stored or published. */
  redactor: Redactor
}

const defaultSummaryPrompt =
  'Summarise the conversation so far for a continuation of it: the goal, what was done, ' +
  'the facts and decisions that matter, tool results still needed, and what remains to do. ' +
  'Be concise and complete; the earlier messages will be dropped.'

const knownOptions = new Set([
  'database', 'model', 'limits', 'tools', 'system', 'retry', 'compaction', 'toolExecution',
  'streamIdleTimeoutMs', 'flushIntervalMs', 'pricing', 'inspect', 'clock', 'busyTimeoutMs', 'onSubscriberError',
  'recovery', 'leaseMs', 'doomLoop', 'telemetry', 'models', 'settings', 'maxSteps', 'maxFileBytes', 'redact',
  'errorClassifier', 'retryPolicy', 'controlPollIntervalMs',
])

function nonNegativeInteger(option: string, value: unknown, fallback: number, min = 0): number {
  if (value === undefined) return fallback
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min) {
    throw new InvalidOptionError(option, value, min === 0 ? 'a non-negative integer' : `an integer >= ${min}`)
  }
  return value
}

/** A delay that becomes a Node timer: an integer from `min` to 2^31-1 ms (larger ones fire after 1 ms). */
function timerMs(option: string, value: unknown, fallback: number, min = 0): number {
  const ms = nonNegativeInteger(option, value, fallback, min)
  if (ms > maxTimerMs) throw new InvalidOptionError(option, value, `an integer from ${min} to ${maxTimerMs} ms (the longest delay a timer can hold)`)
  return ms
}

function functionOption<T>(option: string, value: T | undefined): T | undefined {
  if (value !== undefined && typeof value !== 'function') throw new InvalidOptionError(option, value, 'a function')
  return value
}

function plainObject(option: string, value: unknown): Record<string, unknown> {
  if (value === undefined) return {}
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new InvalidOptionError(option, value, 'an object')
  return value as Record<string, unknown>
}

function rejectUnknown(option: string, value: Record<string, unknown>, known: string[]): void {
  for (const key of Object.keys(value)) {
    if (!known.includes(key)) throw new InvalidOptionError(`${option}.${key}`, value[key], `one of ${known.join(', ')} (unknown option)`)
  }
}

/** What an error may say about a rejected model: never the whole object (its config may hold secrets). */
function modelSummary(model: unknown): unknown {
  if (typeof model !== 'object' || model === null) return model
  const { specificationVersion, provider, modelId } = model as Record<string, unknown>
  return { specificationVersion, provider, modelId }
}

/**
 * Validates options and fills in defaults (everything but `database`, which `openDatabase`
 * checks).
 *
 * @example
 * resolveConfig({ model }) // { retry: { maxAttempts: 8, ... }, ... }
 */
export function resolveConfig(options: EngineOptions): ResolvedConfig {
  if (typeof options !== 'object' || options === null) throw new InvalidOptionError('options', options, 'an object')
  for (const key of Object.keys(options)) {
    if (!knownOptions.has(key)) throw new InvalidOptionError(key, (options as unknown as Record<string, unknown>)[key], `a known option (${[...knownOptions].join(', ')})`)
  }
  const models = { ...plainObject('models', options.models) } as Record<string, unknown>
  for (const [name, m] of Object.entries(models)) {
    if (!isSupportedModel(m)) throw new InvalidOptionError(`models.${name}`, modelSummary(m), supportedModelsText)
  }
  if (options.model !== undefined && models.default !== undefined && options.model !== models.default) {
    throw new InvalidOptionError('models.default', modelSummary(models.default), 'absent when `model` is given (`model` is the default model)')
  }
  const model: unknown = options.model ?? models.default
  if (!isSupportedModel(model)) throw new InvalidOptionError('model', modelSummary(model), supportedModelsText)
  models.default = model
  const settings = plainObject('settings', options.settings) as Omit<TurnSettings, 'maxSteps'>
  validateTurnSettings('settings', settings, (name, value, expected) => new InvalidOptionError(name, value, expected))
  if ('maxSteps' in settings) throw new InvalidOptionError('settings.maxSteps', settings.maxSteps, 'the top-level option maxSteps')

  let limits: ModelLimits | undefined
  if (options.limits !== undefined) {
    const raw = plainObject('limits', options.limits)
    rejectUnknown('limits', raw, ['context', 'output'])
    limits = {
      context: nonNegativeInteger('limits.context', raw.context, 0),
      output: nonNegativeInteger('limits.output', raw.output, 0),
    }
  }

  const tools = plainObject('tools', options.tools) as ToolSet
  for (const [name, tool] of Object.entries(tools)) {
    if (typeof tool !== 'object' || tool === null) throw new InvalidOptionError(`tools.${name}`, tool, 'an AI SDK tool() definition')
    if (typeof tool.execute !== 'function') throw new InvalidOptionError(`tools.${name}.execute`, tool.execute, 'a function (turnchart runs the tools)')
  }

  if (options.system !== undefined && typeof options.system !== 'string') throw new InvalidOptionError('system', options.system, 'a string')

  const compaction = plainObject('compaction', options.compaction)
  rejectUnknown('compaction', compaction, ['auto', 'reserved', 'maxPerTurn', 'prompt'])
  if (compaction.auto !== undefined && typeof compaction.auto !== 'boolean') throw new InvalidOptionError('compaction.auto', compaction.auto, 'a boolean')
  if (compaction.prompt !== undefined && (typeof compaction.prompt !== 'string' || compaction.prompt.length === 0)) {
    throw new InvalidOptionError('compaction.prompt', compaction.prompt, 'a non-empty string')
  }

  const toolExecution = plainObject('toolExecution', options.toolExecution)
  rejectUnknown('toolExecution', toolExecution, ['concurrency', 'timeoutMs', 'maxOutputBytes'])

  const doomLoop = plainObject('doomLoop', options.doomLoop)
  rejectUnknown('doomLoop', doomLoop, ['policy', 'repeats', 'maxCycleLength', 'cycleRepeats'])
  if (doomLoop.policy !== undefined && !['stop', 'ask', 'off'].includes(doomLoop.policy as string)) {
    throw new InvalidOptionError('doomLoop.policy', doomLoop.policy, "'stop', 'ask' or 'off'")
  }

  if (options.inspect !== undefined && typeof options.inspect !== 'function' && (typeof options.inspect !== 'object' || options.inspect === null)) {
    throw new InvalidOptionError('inspect', options.inspect, 'a function or an observer')
  }
  if (options.onSubscriberError !== undefined && typeof options.onSubscriberError !== 'function') {
    throw new InvalidOptionError('onSubscriberError', options.onSubscriberError, 'a function')
  }
  const pricing = options.pricing === undefined ? undefined : (plainObject('pricing', options.pricing) as Pricing)
  if (pricing) {
    rejectUnknown('pricing', pricing as Record<string, unknown>, ['input', 'output', 'cacheRead', 'cacheWrite'])
    for (const [key, value] of Object.entries(pricing)) {
      if (typeof value !== 'number' || !(value >= 0)) throw new InvalidOptionError(`pricing.${key}`, value, 'a non-negative number')
    }
  }

  const recovery = plainObject('recovery', options.recovery)
  rejectUnknown('recovery', recovery, ['policy', 'onOpen', 'intervalMs'])
  if (recovery.policy !== undefined && recovery.policy !== 'resume' && recovery.policy !== 'abort') {
    throw new InvalidOptionError('recovery.policy', recovery.policy, "'resume' or 'abort'")
  }
  if (recovery.onOpen !== undefined && typeof recovery.onOpen !== 'boolean') throw new InvalidOptionError('recovery.onOpen', recovery.onOpen, 'a boolean')

  if (options.busyTimeoutMs !== undefined) timerMs('busyTimeoutMs', options.busyTimeoutMs, 5000)
  if (options.clock !== undefined && (typeof options.clock !== 'object' || options.clock === null || typeof options.clock.setTimeout !== 'function')) {
    throw new InvalidOptionError('clock', options.clock, 'an XState clock (setTimeout and clearTimeout), e.g. a SimulatedClock')
  }
  const redact = plainObject('redact', options.redact)
  rejectUnknown('redact', redact, ['secrets'])
  const secrets = redact.secrets ?? []
  if (!Array.isArray(secrets)) throw new InvalidOptionError('redact.secrets', '(hidden)', 'an array of strings')
  secrets.forEach((secret, i) => {
    // The value itself is a secret: the error names its index, never its text.
    if (typeof secret !== 'string' || secret.length < minSecretLength) {
      throw new InvalidOptionError(`redact.secrets[${i}]`, typeof secret === 'string' ? `(a string of ${secret.length} characters)` : typeof secret, `a string of at least ${minSecretLength} characters`)
    }
  })

  const retry = validateRetryOptions(options.retry ?? {}, 'retry')
  const defaults = defaultFailurePolicies(retry)
  const telemetry = plainObject('telemetry', options.telemetry)
  rejectUnknown('telemetry', telemetry, ['tracer', 'recordInputs', 'recordOutputs'])
  if (telemetry.tracer !== undefined && typeof (telemetry.tracer as { startSpan?: unknown } | null)?.startSpan !== 'function') {
    throw new InvalidOptionError('telemetry.tracer', telemetry.tracer, 'an OpenTelemetry Tracer (with startSpan)')
  }
  for (const key of ['recordInputs', 'recordOutputs']) {
    if (telemetry[key] !== undefined && typeof telemetry[key] !== 'boolean') throw new InvalidOptionError(`telemetry.${key}`, telemetry[key], 'a boolean')
  }

  const redactor = createRedactor(secrets as string[])
  return {
    model,
    models: models as Record<string, ProviderLanguageModel>,
    call: { ...(limits && limits.output > 0 ? { maxOutputTokens: limits.output } : {}), ...settings },
    maxSteps: options.maxSteps === null ? undefined : nonNegativeInteger('maxSteps', options.maxSteps, 100, 1),
    maxFileBytes: nonNegativeInteger('maxFileBytes', options.maxFileBytes, 10_000_000, 0),
    limits,
    tools,
    system: options.system,
    retry,
    failure: {
      // The default classifier gets the app's secrets, so a body is redacted before it is cut to 8 KB.
      classify: functionOption('errorClassifier', options.errorClassifier) ?? ((error: unknown) => classifyError(error, redactor)),
      retry: functionOption('retryPolicy', options.retryPolicy) ?? defaults.retry,
    },
    compaction: {
      auto: (compaction.auto as boolean | undefined) ?? true,
      reserved: compaction.reserved === undefined ? undefined : nonNegativeInteger('compaction.reserved', compaction.reserved, 0),
      maxPerTurn: nonNegativeInteger('compaction.maxPerTurn', compaction.maxPerTurn, 2),
      prompt: (compaction.prompt as string | undefined) ?? defaultSummaryPrompt,
    },
    toolExecution: {
      concurrency: nonNegativeInteger('toolExecution.concurrency', toolExecution.concurrency, 4, 1),
      timeoutMs: timerMs('toolExecution.timeoutMs', toolExecution.timeoutMs, 300_000, 1),
      maxOutputBytes: nonNegativeInteger('toolExecution.maxOutputBytes', toolExecution.maxOutputBytes, 100_000, 64),
    },
    doomLoop: {
      policy: (doomLoop.policy as DoomLoopOptions['policy'] | undefined) ?? defaultDoomLoopOptions.policy,
      repeats: nonNegativeInteger('doomLoop.repeats', doomLoop.repeats, defaultDoomLoopOptions.repeats, 2),
      maxCycleLength: nonNegativeInteger('doomLoop.maxCycleLength', doomLoop.maxCycleLength, defaultDoomLoopOptions.maxCycleLength, 1),
      cycleRepeats: nonNegativeInteger('doomLoop.cycleRepeats', doomLoop.cycleRepeats, defaultDoomLoopOptions.cycleRepeats, 2),
    },
    streamIdleTimeoutMs: timerMs('streamIdleTimeoutMs', options.streamIdleTimeoutMs, 60_000, 1),
    flushIntervalMs: timerMs('flushIntervalMs', options.flushIntervalMs, 250),
    pricing,
    inspect: options.inspect,
    clock: options.clock,
    onSubscriberError: options.onSubscriberError ?? ((error) => console.error('turnchart: a subscriber threw', error)),
    recovery: {
      policy: (recovery.policy as 'resume' | 'abort' | undefined) ?? 'resume',
      onOpen: (recovery.onOpen as boolean | undefined) ?? true,
      intervalMs: timerMs('recovery.intervalMs', recovery.intervalMs, timerMs('leaseMs', options.leaseMs, 30_000, 100)),
    },
    leaseMs: timerMs('leaseMs', options.leaseMs, 30_000, 100),
    controlPollIntervalMs: timerMs('controlPollIntervalMs', options.controlPollIntervalMs, 200, 10),
    telemetry: new Telemetry(telemetry as TelemetryOptions),
    redactor,
  }
}
