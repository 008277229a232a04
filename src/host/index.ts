/**
 * `turnchart/host`: the hosting seam. A host of turns (a durable-execution engine, a queue, a
 * serverless platform) runs turnchart's turns with `HostedTurns`, as `turnchart/restate` does
 * (docs/hosting.md).
 */
export { HostedTurns } from './hosted-turns'
export type { TurnHost, TurnPause, HostedPrompt, HostedTurnResult, HostedSessionStatus, HostedTurnStatus, ChildCall } from './turn-host'
// The public types a host's own entry names (so it imports this seam only).
export type { EngineOptions } from '../config/options'
export type { PromptOptions } from '../core/types'
export type { PromptInput } from '../conversation/user-input'
