/**
 * What a cassette stores of a model call's values, and back: stream parts and errors as JSON.
 * Bytes, URLs and dates are tagged (`{ "$bytes": base64 }`, `{ "$url": href }`,
 * `{ "$date": iso }`); an error keeps its name, message, code and causes, and an AI SDK
 * `APICallError` its status, allowlisted response headers, body and whether it is retryable,
 * all redacted (never its URL or request body), so a replay is classified as the call was.
 */
import { APICallError } from 'ai'
import type { Redactor } from '../core/secrets/redact-secrets'
import { allowedResponseHeaderPrefixes, allowedResponseHeaders } from '../policy/provider-errors'

/** A stored error: enough to rebuild what the provider threw. */
export interface CassetteError {
  name: string
  message: string
  code?: string
  /** Set for an AI SDK `APICallError`. */
  apiCall?: { statusCode?: number; responseHeaders?: Record<string, string>; responseBody?: string; isRetryable: boolean; data?: unknown }
  cause?: CassetteError
}

const maxCauseDepth = 5

/**
 * A value as a cassette stores it.
 *
 * @example
 * toCassetteJson({ type: 'file', data: new Uint8Array([1]) }, redactor) // { type: 'file', data: { $bytes: 'AQ==' } }
 */
export function toCassetteJson(value: unknown, redactor: Redactor): unknown {
  if (value instanceof Uint8Array) return { $bytes: Buffer.from(value).toString('base64') }
  if (value instanceof URL) return { $url: value.href }
  if (value instanceof Date) return { $date: value.toISOString() }
  if (value instanceof Error) return { $error: cassetteError(value, redactor, 0) }
  if (Array.isArray(value)) return value.map((item) => toCassetteJson(item, redactor))
  if (typeof value === 'object' && value !== null) {
    const out: Record<string, unknown> = {}
    for (const [key, field] of Object.entries(value)) if (field !== undefined) out[key] = toCassetteJson(field, redactor)
    return out
  }
  return typeof value === 'function' || typeof value === 'symbol' ? undefined : value
}

/**
 * A stored value back as it was: bytes, URLs, dates and errors rebuilt.
 *
 * @example
 * fromCassetteJson({ $bytes: 'AQ==' }) // Uint8Array [1]
 */
export function fromCassetteJson(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(fromCassetteJson)
  if (typeof value !== 'object' || value === null) return value
  const record = value as Record<string, unknown>
  const keys = Object.keys(record)
  if (keys.length === 1) {
    if (typeof record.$bytes === 'string') return new Uint8Array(Buffer.from(record.$bytes, 'base64'))
    if (typeof record.$url === 'string') return new URL(record.$url)
    if (typeof record.$date === 'string') return new Date(record.$date)
    if (typeof record.$error === 'object' && record.$error !== null) return errorOf(record.$error as CassetteError)
  }
  return Object.fromEntries(keys.map((key) => [key, fromCassetteJson(record[key])]))
}

/**
 * What was thrown, as a cassette stores it.
 *
 * @example
 * cassetteError(new APICallError({ message: 'Too Many Requests', statusCode: 429, … }), redactor)
 */
export function cassetteError(error: unknown, redactor: Redactor, depth = 0): CassetteError {
  if (!(error instanceof Error)) return { name: 'Error', message: redactor.text(typeof error === 'string' ? error : JSON.stringify(error) ?? String(error)) }
  const out: CassetteError = { name: error.name, message: redactor.text(error.message) }
  const code = (error as { code?: unknown }).code
  if (typeof code === 'string') out.code = code
  if (APICallError.isInstance(error)) {
    out.apiCall = {
      isRetryable: error.isRetryable,
      ...(error.statusCode !== undefined ? { statusCode: error.statusCode } : {}),
      ...(error.responseHeaders ? { responseHeaders: redactor.value(allowlisted(error.responseHeaders)) } : {}),
      ...(error.responseBody !== undefined ? { responseBody: redactor.text(error.responseBody) } : {}),
      ...(error.data !== undefined ? { data: redactor.value(toCassetteJson(error.data, redactor)) } : {}),
    }
  }
  if (error.cause !== undefined && depth < maxCauseDepth) out.cause = cassetteError(error.cause, redactor, depth + 1)
  return out
}

/**
 * The error a stored one describes: an `APICallError` when it was one, else an `Error` with its name, code and causes.
 *
 * @example
 * APICallError.isInstance(errorOf({ name: 'AI_APICallError', message: 'x', apiCall: { statusCode: 429, isRetryable: true } })) // true
 */
export function errorOf(stored: CassetteError): Error {
  const cause = stored.cause ? errorOf(stored.cause) : undefined
  if (stored.apiCall) {
    return new APICallError({
      message: stored.message,
      url: 'cassette:',
      requestBodyValues: {},
      statusCode: stored.apiCall.statusCode,
      responseHeaders: stored.apiCall.responseHeaders,
      responseBody: stored.apiCall.responseBody,
      isRetryable: stored.apiCall.isRetryable,
      data: stored.apiCall.data === undefined ? undefined : fromCassetteJson(stored.apiCall.data),
      cause,
    })
  }
  const error = new Error(stored.message, cause === undefined ? undefined : { cause })
  error.name = stored.name
  if (stored.code !== undefined) Object.assign(error, { code: stored.code })
  return error
}

/** Response headers the store keeps (src/policy/provider-errors.ts): what a retry reads, never a cookie or a key. */
export function allowlisted(headers: Record<string, string | undefined>): Record<string, string> {
  const kept: Record<string, string> = {}
  for (const [name, value] of Object.entries(headers)) {
    const key = name.toLowerCase()
    if (typeof value !== 'string') continue
    if (allowedResponseHeaders.includes(key) || allowedResponseHeaderPrefixes.some((p) => key.startsWith(p))) kept[key] = value
  }
  return kept
}
