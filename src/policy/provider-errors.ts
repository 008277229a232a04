/**
 * The tables behind error classification: what providers say when the context is full, when
 * they want us to come back later, when coming back will not help, and what a broken
 * connection looks like in Node. Data only; `classify-error.ts` decides the order.
 *
 * Patterns are case-insensitive and written to match both prose ("Too Many Requests") and
 * machine codes ("too_many_requests", "RESOURCE_EXHAUSTED"), because providers put either
 * in `error.message`, `error.type`, `error.code` or `error.status`.
 */

/** Separator that matches a space, underscore or hyphen, so one pattern covers prose and codes. */
const S = '[\\s_-]*'

/**
 * Messages that mean "the prompt does not fit the model's context". Checked against the
 * provider's message, the structured codes and the raw response body.
 *
 * @example
 * contextOverflowPatterns.some((p) => p.test('prompt is too long: 210000 tokens > 200000 maximum')) // true
 */
export const contextOverflowPatterns: readonly RegExp[] = [
  /prompt is too long/i, // Anthropic
  /exceeds the context window/i, // OpenAI Responses API
  /maximum context length is \d[\d,]*\s*tokens/i, // OpenAI, Azure, OpenRouter, vLLM, DeepSeek
  /input token count[\s\S]*?exceeds the maximum/i, // Google Gemini
  /reduce the length of the messages/i, // OpenAI, Groq, Cerebras
  new RegExp(`context${S}length${S}exceeded`, 'i'), // codes and prose alike
  /request entity too large/i, // HTTP 413 pages from gateways
  /exceeds the available context size/i, // llama.cpp server
  /greater than the context length/i, // LM Studio, local runners
  /exceeded model token limit/i, // Moonshot / Kimi
  new RegExp(`context${S}window${S}exceeded`, 'i'), // several OpenAI-compatible hosts
  /exceeds? (?:the )?(?:maximum |max )?context length/i, // Ollama ("input length exceeds the context length")
  /exceeded max context length/i, // Ollama ("prompt too long; exceeded max context length by N tokens")
  /too large for model with \d+ maximum context length/i, // Mistral
  /input is too long for requested model/i, // Amazon Bedrock
  /maximum prompt length is \d+/i, // xAI
  /prompt token count of \d+ exceeds the limit/i, // GitHub Copilot
  /longer than the maximum model length/i, // vLLM ("decoder prompt ... is longer than the maximum model length")
  /`inputs` tokens \+ `max_new_tokens` must be <=/i, // Hugging Face TGI
  // The OpenAI SDK's text for a 400 or 413 without a body (Cerebras answers an oversized prompt so),
  // relayed by gateways and wrapped providers; an APICallError's own 413 is overflow by its status.
  /\b4(?:00|13) status code \(no body\)/i,
]

/** Structured codes (in `error.code`, `error.type`, `code`…) that mean context overflow. */
export const contextOverflowCodes: readonly string[] = ['context_length_exceeded', 'exceed_context_size_error']

/**
 * Phrases and types that mean "try again later". Matched against the provider's message and
 * structured codes/types, and against the error's own message.
 *
 * @example
 * retryablePatterns.some((p) => p.test('overloaded_error')) // true
 */
export const retryablePatterns: readonly RegExp[] = [
  new RegExp(`too${S}many${S}requests`, 'i'), // HTTP 429 text, Anthropic/OpenRouter "too_many_requests"
  new RegExp(`rate${S}limit`, 'i'), // "rate_limit_exceeded", "rate_limit_error", "Rate limit reached"
  /overloaded/i, // Anthropic "overloaded_error", OpenAI "engine is currently overloaded"
  new RegExp(`server${S}error`, 'i'), // OpenAI "server_error", "Internal Server Error"
  new RegExp(`resource${S}exhausted`, 'i'), // Google "RESOURCE_EXHAUSTED"
  /\bunavailable\b/i, // Google "UNAVAILABLE", "Service Unavailable"
  /\bapi_error\b/i, // Anthropic's generic 500 type, also sent mid-stream without a status
  // Wording of gateways and of providers that send only text (no status-specific body, or an
  // error event mid-stream without a status). Not a bare "try again": 400s say "fix it and try again".
  /try (?:your request |it )?again (?:later|shortly|soon|in a (?:few|moment|bit|minute)|in \d)/i, // "Please try again later"
  /retry (?:your request|later|shortly|in a (?:few|moment))/i, // "Please retry your request", "retry later"
  /\bat (?:full )?capacity\b/i, // "Selected model is at capacity", "We are at capacity"
  /(?:insufficient|no|out of) (?:\w+ )?capacity/i, // "insufficient capacity", "no capacity available", "out of GPU capacity"
  /capacity (?:constraints|exceeded|limit)/i, // "Due to capacity constraints…"
  /high (?:demand|load|traffic)/i, // "experiencing high demand", "the server is under high load"
  // Zhipu / Moonshot "High concurrency usage…"; a concurrency limit only when it was hit ("Concurrency
  // limit exceeded for user"): a 400 that merely names a concurrency limit ("must be between 1 and 8") is not.
  new RegExp(`high${S}concurrency|concurrency${S}limit${S}(?:exceeded|reached|hit)|(?:exceeded|reached|hit) (?:the |your )?concurrency${S}limit|too many concurrent requests`, 'i'),
  /rate increased too quickly/i, // Alibaba DashScope "Request rate increased too quickly" (burst protection)
  new RegExp(`provider${S}returned${S}error`, 'i'), // OpenRouter "Provider returned error", "provider-returned-error"
  /try your request again/i, // "try your request again" (a request that was fine: nothing to fix)
  /\b(?:status(?: code)?|http)[\s:]*(?:408|429|5\d\d)\b/i, // "upstream returned status 524", "HTTP 503" in a gateway's text
  new RegExp(`stream${S}read${S}error`, 'i'), // an error envelope of type "stream_read_error": the body broke mid-read
  /\b(?:upstream |backend )?connection (?:was )?(?:refused|reset)\b/i, // a 400 whose body says "upstream connection refused"
  /\b(?:server|service|system|engine|model|provider|upstream) (?:is )?(?:currently |too )?busy\b/i, // DeepSeek "Server is busy"
  /no healthy upstream/i, // Envoy's 503 page
  /upstream connect error/i, // Envoy "upstream connect error or disconnect/reset before headers"
  /bad gateway/i, // 502 pages passed through as text
  /is currently loading/i, // Hugging Face "Model … is currently loading"
  /resource has been exhausted/i, // Google "Resource has been exhausted (e.g. check quota)." as text only
  /internal error/i, // Google "Internal error encountered." mid-stream
  /temporarily (?:unavailable|overloaded|down|unable)/i, // "temporarily unable to serve your request"
]

/**
 * Markers in a 429/5xx body that say retrying cannot help: the quota or billing is spent, or
 * the content was refused. They override the status code (the AI SDK marks these retryable).
 * Split in three because one group has an exception (see `windowQuotaPatterns`).
 */

/** The account is out of money or credit: always fatal. */
export const spentQuotaPatterns: readonly RegExp[] = [
  new RegExp(`insufficient${S}quota`, 'i'), // OpenAI code and type
  new RegExp(`credit${S}balance`, 'i'), // Anthropic "Your credit balance is too low"
  /insufficient (?:credits|balance|funds)/i, // OpenRouter and resellers
  new RegExp(`billing${S}(?:hard${S})?limit`, 'i'), // OpenAI "Billing hard limit has been reached"
  new RegExp(`billing${S}not${S}active`, 'i'), // OpenAI "billing_not_active"
  // Not a bare /billing/: OpenAI's ordinary rate-limit message links to ".../account/billing".
]

/**
 * "Quota exceeded" wording. Fatal, except when the provider also says when to come back
 * (Google's `RetryInfo.retryDelay`): Gemini sends this wording for per-minute quotas too.
 */
export const windowQuotaPatterns: readonly RegExp[] = [
  new RegExp(`quota${S}exceeded`, 'i'), // Google "Quota exceeded for metric …"
  /exceeded your current quota/i, // OpenAI (with insufficient_quota) and Gemini
  /plan and billing details/i, // "please check your plan and billing details"
]

/**
 * The content was refused by a filter or the model: sending it again gets the same answer.
 * `refused` deliberately does not match "connection refused", which is a network failure.
 */
export const contentRefusedPatterns: readonly RegExp[] = [
  new RegExp(`content${S}filter`, 'i'), // Azure "content_filter"
  /moderation/i, // "flagged by moderation"
  new RegExp(`content${S}(?:management${S})?policy`, 'i'), // Azure "content management policy"
  /responsibleaipolicyviolation/i, // Azure innererror code
  /(?<!connection\s+(?:was\s+|been\s+)?)\brefused\b/i, // "the request was refused"
  /\brefusal\b/i,
]

/** Error `code` values (Node, undici, Bun) of a failed connection. Checked along the cause chain. */
export const networkErrorCodes: readonly string[] = [
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'EAI_AGAIN',
  'ENETUNREACH',
  'EHOSTUNREACH',
  'ENETDOWN',
  // undici's connection-level codes; not UND_ERR_ABORTED (a deliberate abort) nor argument errors (bugs)
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'UND_ERR_DESTROYED',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  // Bun's names for the same failures
  'ConnectionRefused',
  'ConnectionClosed',
  'FailedToOpenSocket',
]

/**
 * Message (or `name: message`) patterns of a failed connection, for errors that carry no code.
 *
 * @example
 * networkErrorPatterns.some((p) => p.test('TypeError: fetch failed')) // true
 */
export const networkErrorPatterns: readonly RegExp[] = [
  /ECONNRESET/,
  /ECONNREFUSED/,
  /ETIMEDOUT/,
  /EPIPE/,
  /EAI_AGAIN/,
  /UND_ERR_(?:SOCKET|CLOSED|DESTROYED|CONNECT_TIMEOUT|HEADERS_TIMEOUT|BODY_TIMEOUT)/,
  /socket hang up/i,
  /fetch failed/i,
  /failed to fetch/i,
  /\bterminated\b/i, // undici: the body stream was cut mid-response
  /other side closed/i, // undici SocketError
  /premature close/i,
  // @ai-sdk/openai-compatible: the SSE body ended cleanly before any finish_reason (a proxy or
  // server that closed the stream early, or a 200 that was not an event stream at all)
  /stream ended without a finish reason/i,
  /connection (?:was )?(?:reset|refused|closed)/i,
  /time[_-]?out|timed[\s_-]?out/i, // "timeout", "timed out", "TimeoutError", "ConnectTimeoutError"
  /network error/i,
]

/**
 * Response headers that may be stored on a message. Everything else (cookies, auth echoes,
 * tracing internals) is dropped. `x-ratelimit-*` is matched by prefix.
 */
export const allowedResponseHeaders: readonly string[] = [
  'content-type',
  'retry-after',
  'retry-after-ms',
  'x-request-id',
  'request-id',
]

/** Header name prefixes allowed on the stored record. */
export const allowedResponseHeaderPrefixes: readonly string[] = ['x-ratelimit-']

/** Stored response bodies are cut to this many characters (8 KB) to keep messages small. */
export const maxStoredBodyLength = 8 * 1024

/** HTTP statuses that are worth another attempt (request timeout, conflict, rate limit); 5xx is added by rule. */
export const retryableStatusCodes: readonly number[] = [408, 409, 429]

/**
 * Wording that means "too many requests" in a body. Some providers and gateways answer a rate
 * limit with 403 (a WAF, a reseller): such a 403 is retried, not an auth error.
 */
export const rateLimitPatterns: readonly RegExp[] = [
  new RegExp(`too${S}many${S}requests`, 'i'),
  new RegExp(`rate${S}limit`, 'i'),
  /rate increased too quickly/i,
]

/**
 * Failures of a request that never left the process and that no retry can fix: the runtime's
 * fetch refuses the URL itself. Matched on an error of the cause chain (its `code`, or its whole
 * message); `reason` is the stored message, naming the cause.
 */
export const unsendableRequests: ReadonlyArray<{ code?: string; message?: RegExp; reason: string }> = [
  { code: 'ERR_INVALID_URL', reason: "invalid URL: the model's request URL cannot be parsed; check the provider's baseURL" },
  {
    message: /^bad port$/i,
    reason: "bad port: fetch refuses to connect to this port (it is on fetch's list of blocked ports, e.g. 6000 or 6667); give the model's URL another port",
  },
  { message: /^unknown scheme$/i, reason: "unknown scheme: fetch only speaks http: and https:; check the provider's baseURL" },
  { message: /^invalid url$/i, reason: "invalid URL: the model's request URL cannot be parsed; check the provider's baseURL" },
]

/** HTTP statuses that mean the credentials were refused. */
export const authStatusCodes: readonly number[] = [401, 403]

/** Structured codes/types that mean the credentials were refused, for errors that arrive without a status (mid-stream). */
export const authCodes: readonly string[] = [
  'authentication_error',
  'permission_error',
  'invalid_api_key',
  'unauthenticated',
  'permission_denied',
]

/**
 * True when any pattern matches the text.
 *
 * @example
 * matchesAny('socket hang up', networkErrorPatterns) // true
 */
export function matchesAny(text: string | undefined, patterns: readonly RegExp[]): boolean {
  if (!text) return false
  return patterns.some((pattern) => pattern.test(text))
}
