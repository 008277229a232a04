/**
 * turnchart: an LLM agent's turn as an explicit XState v5 statechart, persisted with Kysely.
 */
export { createEngine } from './engine/create-engine'
export type { CloseOptions, Engine, HandedOffReader } from './engine/engine'
export type { EngineNotifications } from './engine/store-feeds'
export type { WhenBusy } from './engine/prompt-calls'
export type { Schedule, ScheduleOptions } from './engine/schedule-calls'
export type { QueuedPrompt } from './conversation/prompt-queue'
export type { ResolvedConfig } from './config/resolved-config'
export type { EngineOptions, EngineModel, CompactionOptions, ToolExecutionOptions } from './config/options'
export type {
  Store,
  SessionStore,
  MessageStore,
  TurnStore,
  TransitionStore,
  QueueStore,
  ControlStore,
  TurnFence,
  TurnUpdate,
  TransactionOptions,
  OpenTurn,
  QueuedPromptRecord,
  ControlRequest,
  OpenedStore,
  ScheduleStore,
  ScheduleRecord,
  ScheduleRule,
  ScheduleAdvance,
  CatchUp,
  CircuitStore,
  CircuitRecord,
} from './store/store'
export { MemoryStore } from './store/memory/memory-store'
export type { DatabaseOption, SqliteFileOption } from './store/backends/database-option'

export { supportedSpecificationVersions, isSupportedModel, type ProviderLanguageModel } from './llm/language-model'
export type { Turn, TurnResult, ApproveOptions, DenyOptions } from './turn/turn-handle'
export type { SessionApprovalReceipt } from './conversation/approval-receipts'
export { inputDigest, canonicalJson } from './core/input-digest'
export type { TurnStreamPart, AsyncIterableStream, TurnListener } from './turn/turn-stream'
export type { CallSettings, TurnSettings, PromptOptions, SessionDefaults, ToolChoiceOption, StoredTurnOptions } from './core/types'
export type { PromptInput } from './conversation/user-input'
export { callInfo, turnOfTool, type CallInfo, type CallSchedule, type TurnToolContext } from './tools/call-info'
export { defer, type DeferOptions } from './tools/defer'
export { sleep, type SleepOptions } from './tools/sleep'
export { childTurnsOf, type ChildTurnRunner, type ChildTurnCall, type ChildTurnResult } from './tools/child-turns'
export type { TurnchartEvent, TurnchartEventType, Listener, ChildTurnFields, ChildProgress, PartOrigin, PartChange, MessageChange, ToolStage } from './core/bus'
export * from './core/errors'
export type * from './core/types'
export { turnMachine, turnStateName, type TurnMachine } from '../machines/turn.machine'
export type { TurnContext, TurnEvent, TurnInput, TurnOutput, TurnStateName } from '../machines/turn.types'
export { classifyError, type ClassifiedError, type ErrorKind } from './policy/classify-error'
export { planRetry, defaultRetryOptions, type RetryOptions, type RetryPlan } from './policy/retry-delay'
export { decideFailure, defaultFailurePolicies, type ErrorClassifier, type RetryPolicy, type RetryQuestion, type FailureDecision, type FailurePolicies } from './policy/decide-failure'
export { isUsageOverflow, usableContext, type ModelLimits } from './policy/overflow'
export { toModelMessages } from './llm/model-messages'
export type { Pricing } from './llm/usage'
export { configureTool, idempotent, type ToolOptions, type ReconcileResult } from './tools/tool-options'
export type { CallResolution } from './tools/resolve-call'
export type { UpgradeBreak, UpgradeChange } from './engine/upgrade-check'
export type { ThrottledEntry, WaitingCallEntry, WaitingEntry, WaitingOptions } from './engine/waiting-calls'
export type { CircuitBreakerOptions, CircuitState } from './llm/circuit-rule'
export type { ModelHealth } from './llm/model-circuits'
export type { AwaitedKind } from './core/call-wait'
export type { TenantUsage } from './engine/session-calls'
export { agentTool, type AgentToolOptions } from './tools/agent-tool'
export { scheduleTool } from './tools/schedule-tool'
export { mergeBudgets, budgetBreach, type BudgetBreach, type TreeSpending } from './policy/budget'
export type { ReplayStep } from './turn/replay'
export { detectDoomLoop, type DoomLoopOptions } from './policy/doom-loop'
export { decideStep, OUTPUT_RETRIES, type StepRule, type StepRuleDecision, type StepRuleInput, type StepVerdict, type GateTurn, type GateOutputCheck } from './policy/step-gate'
export type { RecoveryOptions } from './config/options'
export { toUIMessageStream, toUIMessageStreamResponse, type TurnStreamOptions, type TurnRef, type TurnEventSource } from './ui-stream/to-ui-message-stream'
export { toUIMessages, type TurnchartUIMessage, type TurnchartMessageMetadata, type TurnStateData } from './ui-stream/ui-messages'
export { createChatHandler, defaultMaxBodyBytes, type ChatHandler, type ChatHandlerOptions, type ChatAuthorization, type NewChatSession } from './ui/chat-handler'
export { toNodeListener } from './ui/node-adapter'
export { pollTurnStream, unfinishedTurnId } from './ui/poll-turn'
export type { TurnStreamEnd } from './ui-stream/turn-chunks'
export type { RedactOptions } from './config/options'
export { createRedactor, redactSecrets, REDACTED, type Redactor } from './core/secrets/redact-secrets'
