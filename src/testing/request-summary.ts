/**
 * What a cassette keeps of a call's options: the prompt, the tools and tool choice, the call
 * settings and the request headers, all through the redactor (a key pasted into a prompt is
 * not kept either); never the abort signal. A replay compares its request's prompt, redacted
 * the same way, with the recorded one.
 */
import type { Redactor } from '../core/secrets/redact-secrets'
import { toCassetteJson } from './cassette-json'
import type { RequestSummary } from './cassette'

/** Options that are not the request's content. */
const notRecorded = new Set(['prompt', 'tools', 'toolChoice', 'headers', 'abortSignal', 'includeRawChunks'])

/**
 * @example
 * requestSummary({ prompt, tools, temperature: 0, headers: { authorization: 'Bearer sk-…' }, abortSignal }, redactor)
 * // { prompt, tools, settings: { temperature: 0 }, headers: { authorization: '[redacted]' } }
 */
export function requestSummary(options: unknown, redactor: Redactor): RequestSummary {
  const call = (options ?? {}) as Record<string, unknown>
  const settings: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(call)) if (!notRecorded.has(key) && value !== undefined) settings[key] = value
  const headers = call.headers as Record<string, string | undefined> | undefined
  const json = <T>(value: unknown) => redactor.value(toCassetteJson(value, redactor)) as T
  return {
    prompt: json<unknown[]>(call.prompt ?? []),
    ...(call.tools !== undefined ? { tools: json<unknown[]>(call.tools) } : {}),
    ...(call.toolChoice !== undefined ? { toolChoice: json(call.toolChoice) } : {}),
    ...(Object.keys(settings).length ? { settings: json<Record<string, unknown>>(settings) } : {}),
    ...(headers && Object.keys(headers).length ? { headers: redactor.value(definedHeaders(headers)) } : {}),
  }
}

function definedHeaders(headers: Record<string, string | undefined>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).filter((entry): entry is [string, string] => typeof entry[1] === 'string'))
}
