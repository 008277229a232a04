/**
 * turnchart: an LLM agent's turn as an explicit XState v5 statechart, persisted with Kysely.
 */
export { createEngine, type Engine } from './engine'
export type { EngineOptions, CompactionOptions, ToolExecutionOptions, ResolvedConfig } from './config'
export type { Turn, TurnResult } from './turn/start-turn'
export type { TurnchartEvent, TurnchartEventType, Listener } from './bus'
export * from './errors'
export type * from './types'
export { turnMachine, type TurnMachine } from '../machines/turn.machine'
export type { TurnContext, TurnEvent, TurnInput, TurnOutput, TurnStateName } from '../machines/turn.types'
export { classifyError, type ClassifiedError, type ErrorKind } from './policy/classify-error'
export { planRetry, defaultRetryOptions, type RetryOptions, type RetryPlan } from './policy/retry-delay'
export { isUsageOverflow, usableContext, type ModelLimits } from './policy/overflow'
export { toModelMessages } from './llm/model-messages'
export type { Pricing } from './llm/usage'
