/**
 * `createEngine`'s options: their types only (validation is in resolve-config.ts and the
 * validators beside it; the resolved values in resolved-config.ts).
 */
import type { ConcurrencyLimits } from './concurrency'
import type { McpOptions } from '../tools/mcp-options'
import type { LanguageModel, ToolSet } from 'ai'
import type { ActorOptions, AnyActorLogic, InspectionEvent, Observer } from 'xstate'
import type { Budget, StopCondition, StructuredOutput, TurnSettings } from '../core/types'
import type { TurnchartEvent } from '../core/bus'
import type { StepRule } from '../policy/step-gate'
import type { Pricing } from '../llm/usage'
import type { CircuitBreakerOptions } from '../llm/circuit-rule'
import type { RateLimit } from '../llm/rate-limit-rule'
import type { DoomLoopOptions } from '../policy/doom-loop'
import type { ModelLimits } from '../policy/overflow'
import type { ErrorClassifier, RetryPolicy } from '../policy/decide-failure'
import type { RetryOptions } from '../policy/retry-delay'
import type { DatabaseOption } from '../store/backends/database-option'
import type { TelemetryOptions } from '../telemetry/telemetry'

/** XState's clock interface (setTimeout/clearTimeout), e.g. a `SimulatedClock`. */
export type Clock = NonNullable<ActorOptions<AnyActorLogic>['clock']>

/** Passed to XState's `createActor` (the Stately inspector). */
export type InspectOption = Observer<InspectionEvent> | ((event: InspectionEvent) => void)

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
  /**
   * SQLite file path, ':memory:' (default; on Node ≥ 22.13 without better-sqlite3, Node's
   * node:sqlite serves it), a postgres:// URL, a Kysely instance, or a
   * `MemoryStore` (nothing stored survives the process). A SQLite file that holds another app's
   * tables and none of turnchart's is refused (`NotATurnchartDatabaseError`) unless given as
   * `{ file, shared: true }`.
   */
  database?: DatabaseOption
  /**
   * An AI SDK language model object of any provider: a `LanguageModelV3` (ai v6 providers) or a
   * `LanguageModelV4` (ai v7 providers); the model named `'default'`. Required unless
   * `models.default` is given. Or a list of names of `models` (fallback models, as a prompt's
   * `model`): every turn's default list, its first the `default` model.
   */
  model?: EngineModel | string[]
  /** Models by name, for `prompt(..., { model: 'fast' })` and `createSession({ model })`; `model` is `default`. */
  models?: Record<string, EngineModel>
  /** Default call settings of every turn (`temperature`, `maxOutputTokens`, `topP`, `topK`, `seed`, `stopSequences`, `presencePenalty`, `frequencyPenalty`, `headers`, `providerOptions`, `toolChoice`). */
  settings?: Omit<TurnSettings, 'maxSteps'>
  /** Steps (LLM calls) one turn may make: a guard, a turn past it fails with `StepLimitError`. Default 100. */
  maxSteps?: number
  /**
   * When a turn stops calling the model: the AI SDK's stop conditions (`stepCountIs(n)` or
   * `isStepCount(n)`, `hasToolCall(name)`) or functions of the steps; one or an array (any that
   * holds stops the turn, `completed`, once that step's tools have run). A prompt's `stopWhen`
   * replaces it. Durable: a turn another engine recovers runs with that engine's `stopWhen`.
   */
  stopWhen?: StopCondition | StopCondition[]
  /**
   * The app's own rules of the step gate: asked between two model calls (before the first one
   * too, after each step's tools), after `maxSteps` and `stopWhen`, in order; the first that
   * answers `complete` or `fail` ends the turn (`completed`, or `failed` with its error), and
   * none answering lets the next step start. A rule that throws fails the turn. Before the
   * first call a rule runs inside the transaction that stores the prompt: keep it quick, and
   * do not use this engine from it. In memory, like `stopWhen`. See docs/behaviour.md.
   */
  stepRules?: StepRule[]
  /**
   * The default structured output of every turn: `Output.object({ schema })` (from `ai`); a
   * prompt's `output` replaces it. The final answer is parsed and checked against the schema,
   * retried once with the reasons, and is `turn.done`'s `output` (docs/behaviour.md). In memory,
   * like `stopWhen`: a turn another engine recovers uses that engine's.
   */
  output?: StructuredOutput
  /**
   * Limits over each run tree (a turn and the child turns its `agentTool`s start, recursively):
   * `{ tokens: { input, output, total }, cost, steps, wallMs }`, checked at the step gate, before
   * every step's model call in the tree (a step's retries and the summaries count, and are
   * checked at the next gate); past one, the call is not made and the turn fails with
   * `BudgetExceededError`.
   * A session's (`createSession({ budget })`) and a prompt's budget win, field by field. Default: none.
   */
  budget?: Budget
  /** Largest file or image a prompt may carry as bytes (stored in the database). Default 10 MB. */
  maxFileBytes?: number
  /** Token limits of the model; without them overflow is detected only from provider errors. */
  limits?: ModelLimits
  /** AI SDK `tool()` definitions with `execute`. */
  tools?: ToolSet
  /**
   * MCP servers whose tools the engine owns (Streamable HTTP or stdio): connected at
   * `createEngine`, reconnected with backoff, a call whose connection dropped is in doubt, hints
   * trusted only with `trust: true`. Needs `@ai-sdk/mcp`. docs/tools.md, "MCP servers".
   */
  mcp?: McpOptions
  /**
   * Tools whose approvals may carry an edited input (`engine.approve(turnId, callId, { input })`):
   * `true` for every tool, or their names. Default: none (an edit hands the tool's input to
   * whoever approves).
   */
  editableApprovals?: boolean | string[]
  /**
   * How long a call waits for its approval before it expires (ms): past it the call is denied
   * (its receipt says `expired`) and the model sees the denial. A tool's own
   * (`configureTool(tool, { approvalTimeoutMs })`) wins. Stored on the waiting part and the turn's
   * row, and checked by the recovery sweep (`recovery.intervalMs`) of whichever engine sweeps, so
   * a parked turn expires too. Default: none (a call waits until it is decided).
   */
  approvalTimeoutMs?: number
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
  /**
   * Per model name, the provider's failures (an outage, overload, a timeout, a rate limit waited
   * past `retry.maxHeaderDelayMs`) within `windowMs` open the model's circuit for `openMs`: no
   * engine on the database sends it a request meanwhile (a step goes on with its next model, or
   * waits in `retry-waiting`); then one request probes it, and its answer closes it. Kept in the
   * store (a row per model that failed), so every engine learns from one. Default
   * `{ failureThreshold: 5, windowMs: 60000, openMs: 30000 }`; `false`: no circuits.
   * See docs/reliability.md.
   */
  circuitBreaker?: Partial<CircuitBreakerOptions> | false
  /**
   * Per name of `models` (`default`: `model`), the most requests and tokens (input and output, as
   * the provider reports them) sent to the model in any minute, by every engine on the database:
   * a step that would pass its model's limit does not send its request, and the turn waits in
   * `throttled` until the limit allows it (it parks past `parkAfterMs`; any engine takes it on).
   * A request's tokens are estimated before it (a quarter of its prompt's characters) and
   * corrected by the usage the provider reports. See docs/reliability.md.
   */
  rateLimits?: Record<string, RateLimit>
  compaction?: CompactionOptions
  toolExecution?: ToolExecutionOptions
  /** A stream silent for this long fails the step as retryable. Default 60000. */
  streamIdleTimeoutMs?: number
  /** Streaming text is written to the database at most this often. Default 250. */
  flushIntervalMs?: number
  /** Prices per million tokens, for `cost` on messages and step-finish parts. */
  pricing?: Pricing
  /** Passed to XState's `createActor` (Stately inspector). */
  inspect?: InspectOption
  /** XState clock for the retry timer; tests pass a `SimulatedClock`. */
  clock?: Clock
  /** SQLite busy timeout in ms (file databases opened by turnchart). Default 5000. */
  busyTimeoutMs?: number
  /**
   * Hears every event of the engine from its first moment: the recovery at open included (a
   * turn it resumes waiting for approval publishes `approval.requested` before `createEngine`
   * resolves, so `engine.subscribe` would miss it). A throw goes to `onSubscriberError`.
   */
  onEvent?: (event: TurnchartEvent) => void
  /** Called once per subscriber that throws. Default: console.error. */
  onSubscriberError?: (error: unknown) => void
  /** Doom-loop detection: repeated identical tool calls and short cycles; see docs/tools.md. */
  doomLoop?: Partial<DoomLoopOptions>
  /** What happens to turns found unfinished (a crashed process); see docs/durability.md. */
  recovery?: RecoveryOptions
  /** A running turn's lease; renewed every third of it. Another engine may take over a turn whose lease ran out. Default 30000. */
  leaseMs?: number
  /** Riding out a database outage; see docs/durability.md. */
  storage?: StorageOptions
  /**
   * How long a turn waiting on a person (awaiting approval) stays held by its engine before it is
   * parked: its actor, lease and timers let go, its row left waiting for whichever engine settles
   * it (approve, deny, abort resume it there). `0` parks at once. Default 60000 (a minute: an
   * answer that comes at once finds the turn held; a wait of days costs no memory). See
   * docs/durability.md.
   */
  parkAfterMs?: number
  /**
   * Limits of running turns over every engine on the database: `perTenant` (the sessions of one
   * `createSession({ tenant })`) and `total`. A prompt queued with `whenBusy: 'enqueue'` over a
   * limit waits in the queue (its handle resolves when it ran), taken fairly, tenant by tenant; a
   * direct prompt over a limit rejects with `ConcurrencyLimitError`. A parked turn holds no slot;
   * a run tree's child turns run in their root's. Not `toolExecution.concurrency` (tool calls
   * within one step). Default: no limit. See docs/deployment.md.
   */
  concurrency?: ConcurrencyLimits
  /**
   * How often an engine reads the database for what other engines did: approve/deny/abort
   * requests stored for its turns, the turns of prompts it queued that another engine runs.
   * With PostgreSQL notifications this is the fallback. Default 200.
   */
  controlPollIntervalMs?: number
  /**
   * PostgreSQL: hear what other engines do (approve, deny, abort, steer, queued prompts, a turn's
   * new rows for a resumed stream) from `LISTEN`/`NOTIFY` on a connection of the engine's own,
   * instead of at the next poll. `true` (default): with a `postgres://` `database`, listen on
   * that URL; with a Kysely instance, poll (turnchart does not know where it connects). A
   * `postgres://` URL: listen there (needed for a Kysely instance, or to bypass a pooler).
   * `false`: poll only, e.g. behind a pooler in transaction mode, which cannot `LISTEN`. No
   * effect on SQLite or a `MemoryStore`. See docs/deployment.md.
   */
  notifications?: boolean | string
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

export interface StorageOptions {
  /**
   * A turn's write that fails for a reason that passes (the connection lost or refused, the
   * server restarting, SQLite busy or locked, a full disk) is tried again, the same transaction,
   * with backoff, until it succeeds or the outage has lasted this long; then the failure is the
   * turn's, as without it (`TurnOutcomeUnknownError` for its final row). `0`: no waiting.
   * Default `leaseMs`: past its lease another engine may take the turn over, and then this
   * engine's write would be refused by the fence anyway.
   */
  outageMs?: number
}

export interface RecoveryOptions {
  /** `resume` (default) continues an interrupted turn; `abort` ends it as aborted. */
  policy?: 'resume' | 'abort'
  /** Recover when the engine opens the database. Default true. */
  onOpen?: boolean
  /** Look for turns to take over (a dead worker's) this often while the engine runs; 0: never. Default `leaseMs`. */
  intervalMs?: number
}
