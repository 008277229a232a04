/**
 * How a waiting call (in doubt, deferred) is settled: `engine.resolveCall`'s resolution checked
 * and applied to the call's part. Used by the running turn's handle on whichever engine runs it.
 */
import type { ToolSet } from 'ai'
import { CallNotWaitingError, InvalidArgumentError } from '../core/errors'
import type { ToolPart } from '../core/types'
import { completeCall, failCall, rerunCall } from './tool-part'

/**
 * What settles a waiting call: `{ output }` (it happened / here is the result: the model sees
 * it), `{ error }` (the model sees this error), `{ retry: true }` (a call in doubt runs again,
 * with the same idempotency key; not for a deferred call).
 */
export type CallResolution = { output: unknown } | { error: string } | { retry: true }

/** How a resolution settled the call (the chart's `call.resolved { how }`). */
export type ResolvedHow = 'output' | 'error' | 'retry' | 'expired'

/**
 * The resolution as given, checked: exactly one of `output`, `error` (a string) or `retry: true`.
 *
 * @example
 * checkResolution({ output: { charged: true } }) // { output: { charged: true } }
 */
export function checkResolution(resolution: unknown): CallResolution {
  if (typeof resolution !== 'object' || resolution === null || Array.isArray(resolution)) {
    throw new InvalidArgumentError('resolution', resolution, 'an object: { output } | { error } | { retry: true }')
  }
  const keys = Object.keys(resolution)
  const r = resolution as Record<string, unknown>
  if (keys.length === 1 && keys[0] === 'output') return { output: r.output }
  if (keys.length === 1 && keys[0] === 'error' && typeof r.error === 'string' && r.error.length > 0) return { error: r.error }
  if (keys.length === 1 && keys[0] === 'retry' && r.retry === true) return { retry: true }
  throw new InvalidArgumentError('resolution', resolution, 'exactly one of { output }, { error: string } or { retry: true }')
}

/**
 * Settles `part` (which must wait) with `resolution`; returns how. Throws `CallNotWaitingError`
 * for a retry of a deferred call (its tool already returned: there is nothing to run again).
 * An output is stored as the tool's own would be (JSON, bounded by `maxOutputBytes`), with the
 * tool's `toModelOutput` applied.
 */
export async function settleWaitingCall(
  part: ToolPart,
  resolution: CallResolution,
  config: { tools: ToolSet; maxOutputBytes: number },
  ids: { turnId: string },
  now: number,
): Promise<ResolvedHow> {
  if ('retry' in resolution) {
    if (part.state.status !== 'in-doubt') throw new CallNotWaitingError(ids.turnId, part.callId, 'only a call in doubt can be retried (a deferred call takes { output } or { error })')
    rerunCall(part, now)
    return 'retry'
  }
  if ('error' in resolution) {
    failCall(part, resolution.error, now)
    return 'error'
  }
  const output = jsonOutput(resolution.output, config.maxOutputBytes)
  const definition = Object.hasOwn(config.tools, part.tool) ? config.tools[part.tool] : undefined
  const modelOutput = definition?.toModelOutput ? await definition.toModelOutput({ toolCallId: part.callId, input: part.state.input as never, output: output as never }) : undefined
  completeCall(part, output, now, modelOutput === undefined ? undefined : JSON.parse(JSON.stringify(modelOutput)))
  return 'output'
}

function jsonOutput(value: unknown, maxBytes: number): unknown {
  if (value === undefined) return null
  const json = JSON.stringify(value) ?? 'null'
  if (Buffer.byteLength(json) > maxBytes) throw new InvalidArgumentError('resolution.output', `${Buffer.byteLength(json)} bytes`, `at most toolExecution.maxOutputBytes (${maxBytes}) bytes of JSON`)
  return JSON.parse(json) as unknown
}
