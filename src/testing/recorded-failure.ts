/**
 * A stored error record (the `error` of a `step.failed` or `compaction.failed` row) turned back
 * into what the provider did, so that a new engine classifies it as the recorded one was and
 * decides the same: retry after the same delay, compact, or fail. An HTTP error becomes the
 * AI SDK's `APICallError` with its status, allowlisted headers and body; a broken connection an
 * `APICallError` with a network cause; a stalled stream our `StreamIdleTimeoutError`; a stream
 * that ended with nothing an empty stream (the engine names it itself).
 */
import { APICallError } from 'ai'
import { StreamIdleTimeoutError, type SerializedError } from '../core/errors'
import { errorFromRecord } from '../core/errors/restore'

/** How a recorded call failed: an error to throw (or send as the stream's error part), or a stream with no output. */
export type RecordedFailure =
  | { type: 'error'; error: unknown }
  /** The stream ended with no output and no finish (`EmptyModelStreamError`). */
  | { type: 'empty' }
  /** The summary request answered no text (`EmptySummaryError`). */
  | { type: 'empty-summary' }

const summaryOverflowPrefix = 'the summary request itself overflowed the context: '

/** Statuses the classifier retries by themselves (src/policy/provider-errors.ts). */
const retriedStatus = (status: number) => status === 408 || status === 409 || status === 429 || status >= 500

/**
 * @example
 * const failure = recordedFailure({ name: 'APIError', message: 'Rate limit reached', statusCode: 429, isRetryable: true,
 *   responseHeaders: { 'retry-after-ms': '5' }, responseBody: '{"error":{"message":"Rate limit reached"}}' })
 * // { type: 'error', error: APICallError { statusCode: 429, responseHeaders: { 'retry-after-ms': '5' }, … } }
 */
export function recordedFailure(record: SerializedError): RecordedFailure {
  const inner = providerRecord(record)
  switch (inner.name) {
    case 'EmptyModelStreamError':
      return { type: 'empty' }
    case 'EmptySummaryError':
      return { type: 'empty-summary' }
    case 'StreamIdleTimeoutError':
      return { type: 'error', error: new StreamIdleTimeoutError(typeof inner.idleMs === 'number' ? inner.idleMs : 0) }
    case 'APIError':
    case 'ProviderAuthError':
    case 'ContextOverflowError':
      return { type: 'error', error: apiCallError(inner) }
    case 'UnknownError':
      return { type: 'error', error: new Error(inner.message) }
    default:
      // Another turnchart error (an app's classifier's record): the classifier keeps its record as it is.
      return { type: 'error', error: errorFromRecord(inner) }
  }
}

/** The provider's own failure inside the records the engine wraps it in. */
function providerRecord(record: SerializedError): SerializedError {
  let current = record
  for (let depth = 0; depth < 5; depth++) {
    const last = current.lastError
    if ((current.name === 'RetriesExhaustedError' || current.name === 'CompactionFailedError') && isRecord(last)) {
      current = last as SerializedError
    } else break
  }
  // A summary request that overflowed keeps only the provider's message, after this prefix.
  if (current.name === 'ContextOverflowError' && current.reason === 'summary-overflow' && current.message.startsWith(summaryOverflowPrefix)) {
    return { name: 'ContextOverflowError', message: current.message.slice(summaryOverflowPrefix.length) }
  }
  return current
}

function apiCallError(record: SerializedError): APICallError {
  const statusCode = typeof record.statusCode === 'number' ? record.statusCode : undefined
  const isRetryable = record.isRetryable === true
  // The record keeps the connection failure in its message only; the classifier reads it from
  // a cause (an empty message, so the stored message is not lengthened by it).
  const network = isRetryable && (statusCode === undefined || !retriedStatus(statusCode))
  return new APICallError({
    message: record.message,
    url: 'recorded:',
    requestBodyValues: {},
    statusCode,
    responseHeaders: isStringRecord(record.responseHeaders) ? record.responseHeaders : undefined,
    responseBody: typeof record.responseBody === 'string' ? record.responseBody : undefined,
    isRetryable,
    ...(network ? { cause: Object.assign(new Error(''), { code: 'ECONNRESET' }) } : {}),
  })
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null
}

function isStringRecord(value: unknown): value is Record<string, string> {
  return isRecord(value) && Object.values(value).every((v) => typeof v === 'string')
}
