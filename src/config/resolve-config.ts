/**
 * `createEngine`'s options validated and resolved, one option group per validator (call.ts,
 * models.ts, durability.ts, ... beside this file). Every invalid option fails with an `InvalidOptionError` naming the option and
 * the value; an unknown one is refused with the list of known ones.
 */
import { InvalidOptionError } from '../core/errors'
import type { EngineOptions } from './options'
import type { ResolvedConfig } from './resolved-config'
import { resolveCall } from './call'
import { resolveCompaction } from './compaction'
import { resolveDurability } from './durability'
import { resolveFailure } from './failure'
import { resolveModels, resolveRateLimits } from './models'
import { resolveObservability, resolveSecrets } from './observability'
import { resolveTools } from './tools'
import { resolveConcurrency } from './concurrency'
import { validateMcp } from './mcp'

export const knownOptions: ReadonlySet<string> = new Set([
  'database', 'model', 'models', 'settings', 'maxSteps', 'maxFileBytes', 'limits', 'tools', 'system', 'retry',
  'errorClassifier', 'retryPolicy', 'circuitBreaker', 'rateLimits', 'compaction', 'toolExecution', 'streamIdleTimeoutMs', 'flushIntervalMs', 'pricing',
  'inspect', 'clock', 'busyTimeoutMs', 'onEvent', 'onSubscriberError', 'doomLoop', 'recovery', 'leaseMs', 'storage', 'parkAfterMs', 'controlPollIntervalMs',
  'telemetry', 'redact', 'stopWhen', 'stepRules', 'editableApprovals', 'approvalTimeoutMs', 'notifications', 'budget', 'output', 'concurrency',
  // MCP servers (issue 38)
  'mcp',
] satisfies Array<keyof EngineOptions>)

/**
 * Validates options and fills in defaults (everything but `database`, which `openDatabase`
 * checks). `redact.secrets` is checked here and kept out of the result.
 *
 * @example
 * resolveConfig({ model }) // { retry: { maxAttempts: 5, ... }, ... }
 */
export function resolveConfig(options: EngineOptions): ResolvedConfig {
  if (typeof options !== 'object' || options === null) throw new InvalidOptionError('options', options, 'an object')
  for (const key of Object.keys(options)) {
    if (!knownOptions.has(key)) throw new InvalidOptionError(key, (options as unknown as Record<string, unknown>)[key], `a known option (${[...knownOptions].join(', ')})`)
  }
  resolveSecrets(options)
  // Checked here, kept out of the result (its headers are for the servers only): createEngine reads options.mcp.
  validateMcp(options.mcp)
  const models = resolveModels(options)
  return {
    ...models,
    rateLimits: resolveRateLimits(options, models.models),
    ...resolveCall(options),
    ...resolveTools(options),
    compaction: resolveCompaction(options),
    ...resolveFailure(options),
    ...resolveDurability(options),
    ...resolveObservability(options),
    ...resolveConcurrency(options),
  }
}
