/**
 * The engine's options resolved: validated, defaults filled in. Values and the app's own
 * functions only; the services built from them (telemetry, the redactor, the failure
 * policies) are the engine's (src/engine/engine-services.ts).
 */
import type { ConcurrencyLimits } from './concurrency'
import type { ToolSet } from 'ai'
import type { Budget, StopCondition, StructuredOutput, TurnSettings } from '../core/types'
import type { TurnchartEvent } from '../core/bus'
import type { ProviderLanguageModel } from '../llm/language-model'
import type { Pricing } from '../llm/usage'
import type { ErrorClassifier, RetryPolicy } from '../policy/decide-failure'
import type { DoomLoopOptions } from '../policy/doom-loop'
import type { ModelLimits } from '../policy/overflow'
import type { RetryOptions } from '../policy/retry-delay'
import type { CircuitBreakerOptions } from '../llm/circuit-rule'
import type { RateLimit } from '../llm/rate-limit-rule'
import type { TelemetryOptions } from '../telemetry/telemetry'
import type { Clock, InspectOption } from './options'
import type { StepRule } from '../policy/step-gate'
import type { ToolFingerprint } from '../tools/tool-fingerprint'

export interface ResolvedConfig {
  model: ProviderLanguageModel
  /** Registered models by name; `default` is `model`. */
  models: Record<string, ProviderLanguageModel>
  /** `createEngine({ model: ['primary', 'backup'] })`: the turns' default list of models (fallback models). */
  defaultModels?: string[]
  /** Default call settings of every turn. */
  call: Omit<TurnSettings, 'maxSteps'>
  maxSteps: number | undefined
  /** Limits over each run tree (a prompt's and a session's budget win, field by field). */
  budget: Budget | undefined
  /** The turns' stop conditions (empty: none). */
  stopWhen: StopCondition[]
  /** The app's own rules of the step gate (empty: none). */
  stepRules: readonly StepRule[]
  /** The turns' default structured output (a prompt's `output` wins). */
  output: StructuredOutput | undefined
  maxFileBytes: number
  limits: ModelLimits | undefined
  tools: ToolSet
  /** The fingerprint of `tools` (names and input schema digests), computed by createEngine; each turn stores its part of it. */
  toolFingerprint?: ToolFingerprint
  /** Tools whose approvals may edit the call's input (`true`: all). */
  editableApprovals: boolean | readonly string[]
  /** How long a call waits for approval (undefined: no limit; a tool's own `approvalTimeoutMs` wins). */
  approvalTimeoutMs: number | undefined
  system: string | undefined
  retry: RetryOptions
  /** The app's error classifier, when it replaced turnchart's (`classifyError`). */
  errorClassifier: ErrorClassifier | undefined
  /** The app's retry policy, when it replaced turnchart's (`planRetry` with `retry`). */
  retryPolicy: RetryPolicy | undefined
  /** `circuitBreaker`, defaults filled in; `false`: no circuits. */
  circuitBreaker: CircuitBreakerOptions | false
  /** `rateLimits`, by model name (none: `{}`). */
  rateLimits: Readonly<Record<string, RateLimit>>
  compaction: { auto: boolean; reserved: number | undefined; maxPerTurn: number; prompt: string }
  toolExecution: { concurrency: number; timeoutMs: number; maxOutputBytes: number }
  doomLoop: DoomLoopOptions
  streamIdleTimeoutMs: number
  flushIntervalMs: number
  pricing: Pricing | undefined
  inspect: InspectOption | undefined
  clock: Clock | undefined
  /** The app's listener of every event, from the engine's first moment (`onEvent`). */
  onEvent: ((event: TurnchartEvent) => void) | undefined
  onSubscriberError: (error: unknown) => void
  recovery: { policy: 'resume' | 'abort'; onOpen: boolean; intervalMs: number }
  leaseMs: number
  /** How long a waiting turn is held before it is parked (0: at once). */
  parkAfterMs: number
  /** Limits of running turns over every engine on the database (per tenant, in all); undefined: none. */
  concurrency: ConcurrencyLimits | undefined
  controlPollIntervalMs: number
  /** Listen for PostgreSQL notifications where the database allows (`false`: poll only). */
  notifications: boolean
  busyTimeoutMs: number
  /** How long a turn's write waits out a database outage (0: not at all). */
  storage: { outageMs: number }
  telemetry: TelemetryOptions
}
