/**
 * Decides what a failed step means for the turn: compact (overflow), wait and try again
 * (retryable), stop with an auth error, or stop with the error on the message (fatal).
 * Pure: the input error is only read, never changed.
 */
import { redactSecrets, type Redactor } from '../core/secrets/redact-secrets'
import { APICallError } from 'ai'
import { isErrorLike } from '../core/errors/serialize'
import {
  APIError,
  ProviderAuthError,
  StreamIdleTimeoutError,
  EmptyModelStreamError,
  TurnchartError,
  UnknownError,
  serializeError,
  type SerializedError,
} from '../core/errors'
import {
  allowedResponseHeaderPrefixes,
  allowedResponseHeaders,
  authCodes,
  authStatusCodes,
  contextOverflowCodes,
  contextOverflowPatterns,
  matchesAny,
  maxStoredBodyLength,
  networkErrorCodes,
  networkErrorPatterns,
  contentRefusedPatterns,
  rateLimitPatterns,
  retryablePatterns,
  retryableStatusCodes,
  spentQuotaPatterns,
  unsendableRequests,
  windowQuotaPatterns,
} from './provider-errors'

export type ErrorKind = 'overflow' | 'retryable' | 'auth' | 'fatal'

export interface ClassifiedError {
  kind: ErrorKind
  /** The JSON-serialisable record stored on the assistant message. */
  error: SerializedError
  /** Response headers (lower-cased keys, allowlisted) for the retry delay; `{}` if none. */
  headers: Record<string, string>
}

/** How deep the `.cause` chain is followed: real chains are 2–3 deep; the bound stops cycles. */
const maxCauseDepth = 5

/** Everything the rules look at, gathered once from whatever was thrown. */
interface Evidence {
  /** True when the failure came from the provider (an HTTP answer or a provider error object). */
  fromProvider: boolean
  statusCode?: number
  /** The error's message joined with its causes', URL removed. */
  message: string
  /** The provider's own message from the body (`error.message`, `message`, string `error`…). */
  providerMessage?: string
  /** Structured fields: `error.type`, `error.code`, `error.status`, `type`, `code`. */
  codes: string[]
  /** The raw body (URL removed), searched for overflow markers anywhere in it. */
  rawBody?: string
  /** True when the raw body is not JSON: then it is the message itself (an HTML or text page). */
  bodyIsText: boolean
  /** Allowlisted response headers for the stored record. */
  responseHeaders: Record<string, string>
  /** Headers for the retry delay: the allowlisted ones plus a delay the body asked for. */
  delayHeaders: Record<string, string>
  /** The body itself said when to retry (Google RetryInfo). */
  bodyAskedDelay: boolean
  /** A connection failure somewhere in the cause chain (or the SDK said so without a status). */
  network: boolean
  /** Why the request could not be sent at all (fetch refused its URL), when that is the failure. */
  unsendable?: string
}

/**
 * Classifies a failure of a step. Rules, in order: a request fetch refused to send (a bad port,
 * an unknown scheme, an invalid URL: fatal, no retry can fix it) → overflow (413,
 * `context_length_exceeded`, overflow phrases) → auth (401, 403 unless its body says rate limit)
 * → quota/moderation markers (fatal, even on 429/5xx) → retryable (408, 409, 429, 5xx, retryable
 * phrases or types, network failures, stream idle timeout) → fatal. The SDK's own `isRetryable`
 * is not trusted (it says true for every 5xx).
 *
 * @example
 * const e = new APICallError({ message: 'Too Many Requests', url, requestBodyValues: {}, statusCode: 429,
 *   responseHeaders: { 'retry-after': '3' }, responseBody: '{"type":"error","error":{"type":"too_many_requests"}}' })
 * classifyError(e)
 * // { kind: 'retryable', error: { name: 'APIError', statusCode: 429, isRetryable: true, … }, headers: { 'retry-after': '3' } }
 */
export function classifyError(error: unknown, redactor: Redactor = redactSecrets): ClassifiedError {
  const classified = classify(error, redactor)
  // The record is stored and published: no credential leaves, whatever the provider echoed.
  // The turn log redacts what it writes as well, and the error classes' records redact known key
  // shapes; this redaction stays because it runs the engine's redactor (its configured keys)
  // over every record, the plainly built ones too, before the chart, the hooks and the bus see
  // it (test/policy/classify-error.test.ts, "carries no configured key").
  return { ...classified, error: redactor.value(classified.error) }
}

function classify(error: unknown, redactor: Redactor): ClassifiedError {
  // Our own idle timeout is a stalled stream: always worth another attempt.
  // Nothing came back (silence, or a stream closed before any output): the same request usually succeeds.
  if (StreamIdleTimeoutError.isInstance(error) || EmptyModelStreamError.isInstance(error)) return { kind: 'retryable', error: error.toJSON(), headers: {} }
  if (APICallError.isInstance(error)) return decide(fromApiCallError(error), redactor)
  // Other turnchart errors already carry their own record; they are not provider failures.
  if (TurnchartError.isTurnchartError(error)) return { kind: 'fatal', error: error.toJSON(), headers: {} }
  if (isErrorLike(error)) return decide(fromPlainError(error), redactor)
  // Provider error objects arrive as plain values in the stream's `error` part
  // (e.g. `{ type: 'overloaded_error', message: 'Overloaded' }` from Anthropic mid-stream).
  if (isRecord(error)) return decide(fromErrorObject(error), redactor)
  if (typeof error === 'string' && error.trim()) return decide(fromString(error), redactor)
  return { kind: 'fatal', error: serializeError(error), headers: {} }
}

function decide(ev: Evidence, redactor: Redactor): ClassifiedError {
  const headers = ev.delayHeaders
  const message = ev.providerMessage ?? ev.message
  // Redacted before the cut: a key cut in half by the truncation would no longer match.
  const responseBody = ev.rawBody === undefined ? undefined : truncate(redactor.text(ev.rawBody))
  const providerTexts = [ev.providerMessage, ...ev.codes, ev.bodyIsText ? ev.rawBody : undefined]

  // Nothing was sent: the same request fails the same way on every attempt.
  if (ev.unsendable !== undefined) return { kind: 'fatal', error: new UnknownError(ev.unsendable).toJSON(), headers }

  if (isOverflow(ev, providerTexts)) {
    // ContextOverflowError's class has no reason for a provider error, so the record is built plainly.
    const record: SerializedError = { name: 'ContextOverflowError', message }
    if (ev.statusCode !== undefined) record.statusCode = ev.statusCode
    if (responseBody !== undefined) record.responseBody = responseBody
    return { kind: 'overflow', error: record, headers }
  }

  if (isAuth(ev, providerTexts)) {
    return { kind: 'auth', error: new ProviderAuthError({ message, statusCode: ev.statusCode, responseBody }).toJSON(), headers }
  }

  const record = (isRetryable: boolean): SerializedError =>
    ev.fromProvider
      ? new APIError({
          message,
          statusCode: ev.statusCode,
          isRetryable,
          responseHeaders: Object.keys(ev.responseHeaders).length > 0 ? ev.responseHeaders : undefined,
          responseBody,
        }).toJSON()
      : isRetryable
        ? new APIError({ message, isRetryable: true }).toJSON()
        : new UnknownError(message).toJSON()

  // Quota spent or content refused: another attempt gets the same answer, whatever the status.
  const texts = [...providerTexts, ev.message]
  const quotaSpent =
    matchesAnyOf(texts, spentQuotaPatterns) ||
    // A provider that says when to come back means a per-window quota, not an empty account.
    (matchesAnyOf(texts, windowQuotaPatterns) && !ev.bodyAskedDelay)
  if (quotaSpent || matchesAnyOf(texts, contentRefusedPatterns)) {
    return { kind: 'fatal', error: record(false), headers }
  }

  if (isRetryable(ev, providerTexts)) return { kind: 'retryable', error: record(true), headers }

  return { kind: 'fatal', error: record(false), headers }
}

function isOverflow(ev: Evidence, providerTexts: Array<string | undefined>): boolean {
  if (ev.statusCode === 413) return true
  if (ev.codes.some((code) => contextOverflowCodes.includes(code.toLowerCase()))) return true
  // "code context_length_exceeded anywhere in the body": nested shapes differ by provider.
  if (ev.rawBody && contextOverflowCodes.some((code) => ev.rawBody!.toLowerCase().includes(code))) return true
  return matchesAnyOf([...providerTexts, ev.rawBody, ev.message], contextOverflowPatterns)
}

function isAuth(ev: Evidence, providerTexts: Array<string | undefined>): boolean {
  // A 403 whose body says rate limit is a rate limit (a WAF or a reseller answering so): retried.
  if (ev.statusCode === 403 && matchesAnyOf([...providerTexts, ev.rawBody], rateLimitPatterns)) return false
  if (ev.statusCode !== undefined && authStatusCodes.includes(ev.statusCode)) return true
  // Mid-stream errors have no status; their type still says it.
  return ev.codes.some((code) => authCodes.includes(code.toLowerCase()))
}

function isRetryable(ev: Evidence, providerTexts: Array<string | undefined>): boolean {
  const status = ev.statusCode
  if (status !== undefined && (retryableStatusCodes.includes(status) || status >= 500)) return true
  if (ev.network) return true
  return matchesAnyOf([...providerTexts, ev.message], retryablePatterns)
}

// ---------------------------------------------------------------------------------------------
// Gathering evidence

function fromApiCallError(error: APICallError): Evidence {
  const rawText = typeof error.responseBody === 'string' && error.responseBody.length > 0 ? error.responseBody : undefined
  const parsed = rawText !== undefined ? parseJson(rawText) : undefined
  // The SDK's parsed error (`data`) stands in when the body itself was not kept.
  const body = parsed !== undefined ? parsed : error.data
  const facts = bodyFacts(body)
  const scrub = scrubber(error.url)
  const responseHeaders = allowlistHeaders(error.responseHeaders)
  const hasStatus = typeof error.statusCode === 'number'
  return {
    fromProvider: true,
    statusCode: hasStatus ? error.statusCode : undefined,
    message: scrub(chainMessage(error)),
    providerMessage: facts.message === undefined ? undefined : scrub(facts.message),
    codes: facts.codes,
    rawBody: rawText !== undefined ? scrub(rawText) : undefined,
    bodyIsText: rawText !== undefined && parsed === undefined,
    responseHeaders,
    delayHeaders: withBodyDelay(responseHeaders, facts.retryDelayMs),
    bodyAskedDelay: facts.retryDelayMs !== undefined,
    // With a status an HTTP answer arrived, so only the causes can tell of a broken
    // connection (status 200 + `TypeError: terminated` is a reset mid-stream). Without
    // a status the SDK only sets isRetryable for connection failures.
    network: hasNetworkCause(error, hasStatus ? 1 : 0) || (!hasStatus && error.isRetryable === true),
    unsendable: hasStatus ? undefined : unsendableCause(error),
  }
}

function fromPlainError(error: Error): Evidence {
  return {
    fromProvider: false,
    message: chainMessage(error),
    codes: [],
    bodyIsText: false,
    responseHeaders: {},
    delayHeaders: {},
    bodyAskedDelay: false,
    network: hasNetworkCause(error, 0),
    unsendable: unsendableCause(error),
  }
}

function fromErrorObject(value: Record<string, unknown>): Evidence {
  const facts = bodyFacts(value)
  let raw: string | undefined
  try {
    raw = JSON.stringify(value)
  } catch {
    raw = undefined
  }
  const fromProvider = facts.message !== undefined || facts.codes.length > 0
  return {
    fromProvider,
    statusCode: typeof value.statusCode === 'number' ? value.statusCode : undefined,
    message: facts.message ?? (raw ?? 'unknown error'),
    providerMessage: facts.message,
    codes: facts.codes,
    rawBody: fromProvider ? raw : undefined,
    bodyIsText: false,
    responseHeaders: {},
    delayHeaders: withBodyDelay({}, facts.retryDelayMs),
    bodyAskedDelay: facts.retryDelayMs !== undefined,
    network: false,
  }
}

function fromString(text: string): Evidence {
  return {
    fromProvider: false,
    message: text,
    codes: [],
    bodyIsText: false,
    responseHeaders: {},
    delayHeaders: {},
    bodyAskedDelay: false,
    network: matchesAny(text, networkErrorPatterns),
  }
}

interface BodyFacts {
  message?: string
  codes: string[]
  /** Google's `RetryInfo.retryDelay` ("17s"), in ms. */
  retryDelayMs?: number
}

/**
 * Reads the provider's message and codes from the shapes in use:
 * OpenAI/Azure/Groq `{error:{message,type,code}}`, Anthropic `{type:'error',error:{type,message}}`,
 * Google `{error:{code,message,status,details}}` (sometimes in an array), vLLM/Mistral
 * `{object:'error',message,type,code}`, Ollama `{error:'…'}`, FastAPI `{detail:'…'}`.
 */
function bodyFacts(body: unknown): BodyFacts {
  if (Array.isArray(body)) body = body[0]
  if (!isRecord(body)) return { codes: [] }
  const codes: string[] = []
  const push = (value: unknown) => {
    if (typeof value === 'string' && value.length > 0) codes.push(value)
  }
  let message: string | undefined
  let retryDelayMs: number | undefined
  const inner = body.error
  if (isRecord(inner)) {
    if (typeof inner.message === 'string' && inner.message) message = inner.message
    push(inner.type)
    push(inner.code)
    push(inner.status)
    retryDelayMs = googleRetryDelay(inner.details)
  } else if (typeof inner === 'string' && inner) {
    message = inner
    push(inner)
  }
  push(body.type)
  push(body.code)
  push(body.status)
  if (message === undefined && typeof body.message === 'string' && body.message) message = body.message
  if (message === undefined && typeof body.detail === 'string' && body.detail) message = body.detail
  return { message, codes, retryDelayMs }
}

/** Google puts the wanted delay in the body, not in a header: `{"@type":"…RetryInfo","retryDelay":"17s"}`. */
function googleRetryDelay(details: unknown): number | undefined {
  if (!Array.isArray(details)) return undefined
  for (const detail of details) {
    if (!isRecord(detail) || typeof detail.retryDelay !== 'string') continue
    const match = /^\s*(\d+(?:\.\d+)?)s\s*$/.exec(detail.retryDelay)
    if (match) return Math.ceil(Number(match[1]) * 1000)
  }
  return undefined
}

function withBodyDelay(headers: Record<string, string>, delayMs: number | undefined): Record<string, string> {
  if (delayMs === undefined || 'retry-after' in headers || 'retry-after-ms' in headers) return { ...headers }
  return { ...headers, 'retry-after-ms': String(delayMs) }
}

/** Walks `.cause` (and an AggregateError's `errors`) looking for a connection failure. */
function hasNetworkCause(error: unknown, startDepth: number): boolean {
  let current: unknown = error
  for (let depth = 0; depth <= maxCauseDepth && isErrorLike(current); depth++) {
    if (depth >= startDepth) {
      if (isNetworkError(current)) return true
      const inner = (current as { errors?: unknown }).errors
      if (Array.isArray(inner) && inner.slice(0, 5).some((e) => isErrorLike(e) && isNetworkError(e))) return true
    }
    current = current.cause
  }
  return false
}

/**
 * The reason a request was never sent, when an error of the cause chain is fetch refusing its
 * URL (`unsendableRequests`), e.g. undici's "bad port" under the AI SDK's "Cannot connect to API".
 */
function unsendableCause(error: unknown): string | undefined {
  let current: unknown = error
  for (let depth = 0; depth <= maxCauseDepth && isErrorLike(current); depth++) {
    const code = (current as { code?: unknown }).code
    const message = current.message
    const found = unsendableRequests.find((r) => (r.code !== undefined && r.code === code) || (r.message !== undefined && r.message.test(message)))
    if (found) return found.reason
    current = current.cause
  }
  return undefined
}

function isNetworkError(error: Error): boolean {
  const code = (error as { code?: unknown }).code
  if (typeof code === 'string' && networkErrorCodes.includes(code)) return true
  return matchesAny(`${error.name}: ${error.message}`, networkErrorPatterns)
}

/**
 * "Failed to process successful response" alone says little; with its causes
 * ("…: terminated") it says what happened. Causes already quoted are not repeated.
 */
function chainMessage(error: Error): string {
  let text = error.message || error.name
  let current: unknown = error.cause
  for (let depth = 1; depth <= maxCauseDepth && isErrorLike(current); depth++) {
    const part = current.message
    if (part && !text.includes(part)) text = `${text}: ${part}`
    current = current.cause
  }
  return text
}

function allowlistHeaders(headers: Record<string, string> | undefined): Record<string, string> {
  const kept: Record<string, string> = {}
  if (!headers) return kept
  for (const [name, value] of Object.entries(headers)) {
    const key = name.toLowerCase()
    if (typeof value !== 'string') continue
    if (allowedResponseHeaders.includes(key) || allowedResponseHeaderPrefixes.some((p) => key.startsWith(p))) {
      kept[key] = value
    }
  }
  return kept
}

/** Removes the request URL (it may carry an API key in its query, e.g. Google's `?key=`). */
function scrubber(url: string | undefined): (text: string) => string {
  if (!url) return (text) => text
  const targets = [url, url.split('?')[0]].filter((t, i, all) => t.length > 0 && all.indexOf(t) === i)
  return (text) => targets.reduce((acc, target) => acc.split(target).join('[request url]'), text)
}

const truncationMarker = '…[truncated]'

function truncate(text: string): string {
  if (text.length <= maxStoredBodyLength) return text
  return text.slice(0, maxStoredBodyLength - truncationMarker.length) + truncationMarker
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function matchesAnyOf(texts: Array<string | undefined>, patterns: readonly RegExp[]): boolean {
  return texts.some((text) => matchesAny(text, patterns))
}
