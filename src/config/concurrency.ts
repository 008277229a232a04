/**
 * `concurrency: { perTenant, total }`: how many turns may run at once over every engine on one
 * database, per tenant (`createSession({ tenant })`) and in all. Not `toolExecution.concurrency`,
 * which limits the tool calls of one step within a turn.
 */
import { InvalidOptionError } from '../core/errors'

export interface ConcurrencyLimits {
  /** Running turns of one tenant's sessions at once (sessions without a tenant: no such limit). */
  perTenant?: number
  /** Running turns at once, every tenant together. */
  total?: number
}

/**
 * @example
 * resolveConcurrency({ concurrency: { perTenant: 2 } }) // { concurrency: { perTenant: 2 } }
 */
export function resolveConcurrency(options: { concurrency?: unknown }): { concurrency: ConcurrencyLimits | undefined } {
  const value = options.concurrency
  if (value === undefined) return { concurrency: undefined }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new InvalidOptionError('concurrency', value, 'an object like { perTenant, total }')
  const out: ConcurrencyLimits = {}
  for (const [key, limit] of Object.entries(value)) {
    if (key !== 'perTenant' && key !== 'total') throw new InvalidOptionError(`concurrency.${key}`, limit, 'perTenant or total')
    if (limit === undefined) continue
    if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1) throw new InvalidOptionError(`concurrency.${key}`, limit, 'an integer >= 1')
    out[key] = limit
  }
  return { concurrency: Object.keys(out).length > 0 ? out : undefined }
}
