/**
 * What one turn runs with: its own model, system prompt, tools and call settings (the prompt's
 * options over the session's defaults over the engine's), the engine's limits and policies,
 * and the engine's services. Built once per turn (src/conversation/call-settings.ts) and never
 * changed after; every actor reads the part it declares in its own scope interface.
 */
import type { ToolSet } from 'ai'
import type { Redactor } from '../core/secrets/redact-secrets'
import type { Budget, StopCondition, StructuredOutput, TurnSettings } from '../core/types'
import type { StepRule } from '../policy/step-gate'
import type { ProviderLanguageModel } from '../llm/language-model'
import type { NamedModel } from '../llm/model-fallback'
import type { ModelCircuits } from '../llm/model-circuits'
import type { ModelRateLimits } from '../llm/model-rate-limits'
import type { Pricing } from '../llm/usage'
import type { FailurePolicies } from '../policy/decide-failure'
import type { DoomLoopOptions } from '../policy/doom-loop'
import type { ModelLimits } from '../policy/overflow'
import type { Telemetry } from '../telemetry/telemetry'
import type { ToolFingerprint } from '../tools/tool-fingerprint'

export interface TurnConfig {
  /** The model the turn asks first (its list's first when it named a list). */
  model: ProviderLanguageModel
  /** The registered name of `model` (what its circuit is kept by). */
  modelName: string
  /** Fallback models: the turn's list of models by name (`model: ['primary', 'backup']`), `[0]` being `model`; absent with one model. */
  models?: readonly NamedModel[]
  system: string | undefined
  tools: ToolSet
  /**
   * The tools the turn was started with (stored) and the engine's now: a call of a tool that
   * was removed or changed since is an error part naming it. Absent on a turn stored without one.
   */
  pinnedTools?: { pinned: ToolFingerprint; current: ToolFingerprint }
  /** Tools whose approvals may edit the call's input. */
  editableApprovals: boolean | readonly string[]
  /** How long a call waits for approval before it expires (a tool's own wins); undefined: no limit. */
  approvalTimeoutMs: number | undefined
  /** Call settings of the turn's requests (headers in memory only). */
  call: Omit<TurnSettings, 'maxSteps'>
  limits: ModelLimits | undefined
  compaction: { reserved: number | undefined; prompt: string }
  toolExecution: { concurrency: number; timeoutMs: number; maxOutputBytes: number }
  doomLoop: DoomLoopOptions
  streamIdleTimeoutMs: number
  pricing: Pricing | undefined
  /** Checked at the step gate: when one holds, the turn completes. */
  stopWhen: StopCondition[]
  /** The app's own rules of the step gate (`EngineOptions.stepRules`), asked after `stopWhen`. */
  stepRules: readonly StepRule[]
  /** Structured output: the final answer is parsed with it at the step gate (absent: plain text). */
  output?: StructuredOutput
  /** The budget of the run tree this turn is the root of (a child turn runs under its root's). */
  budget?: Budget
  /** The error classifier and the retry policy every failed model request is decided by. */
  failure: FailurePolicies
  /** The models' circuits (`circuitBreaker`), asked before each request; absent when turned off. */
  circuits?: ModelCircuits
  /** The models' rate limits (`rateLimits`), asked before each request; absent when no model has one. */
  rateLimits?: ModelRateLimits
  telemetry: Telemetry
  /** Removes credentials from errors before they are stored or published. */
  redactor: Redactor
  /** Told of an app hook's failure that ends nothing (a tool's `needsApproval` that threw). */
  onHookError(error: unknown): void
}

/** The engine's services every turn's configuration carries. */
export type TurnServices = Pick<TurnConfig, 'failure' | 'circuits' | 'rateLimits' | 'telemetry' | 'redactor' | 'onHookError'>
