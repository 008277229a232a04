import { APICallError } from 'ai'
import { StreamIdleTimeoutError, MessageAbortedError } from '../../src/core/errors'
import { classifyError, type ErrorKind } from '../../src/policy/classify-error'
import { createRedactor } from '../../src/core/secrets/redact-secrets'

const url = 'http://x/v1/chat/completions'

function apiError(input: {
  statusCode?: number
  body?: unknown
  message?: string
  headers?: Record<string, string>
  isRetryable?: boolean
  cause?: unknown
  url?: string
  requestBodyValues?: unknown
}): APICallError {
  return new APICallError({
    message: input.message ?? 'provider error',
    url: input.url ?? url,
    requestBodyValues: input.requestBodyValues ?? {},
    statusCode: input.statusCode,
    responseHeaders: input.headers,
    responseBody: input.body === undefined ? undefined : typeof input.body === 'string' ? input.body : JSON.stringify(input.body),
    isRetryable: input.isRetryable,
    cause: input.cause,
  })
}

function withCode(message: string, code: string): Error {
  return Object.assign(new Error(message), { code })
}

describe('classifyError: context overflow', () => {
  // [provider, status, body]: real wording from each provider's error responses.
  const cases: Array<[string, number, unknown]> = [
    [
      'Anthropic prompt is too long',
      400,
      { type: 'error', error: { type: 'invalid_request_error', message: 'prompt is too long: 208310 tokens > 200000 maximum' } },
    ],
    [
      'OpenAI Responses exceeds the context window',
      400,
      {
        error: {
          message: 'Your input exceeds the context window of this model. Please adjust your input and try again.',
          type: 'invalid_request_error',
          param: 'input',
          code: null,
        },
      },
    ],
    [
      'OpenAI chat maximum context length',
      400,
      {
        error: {
          message:
            "This model's maximum context length is 128000 tokens. However, your messages resulted in 130512 tokens. Please reduce the length of the messages.",
          type: 'invalid_request_error',
          param: 'messages',
          code: null,
        },
      },
    ],
    [
      'Azure OpenAI context_length_exceeded',
      400,
      {
        error: {
          message: "This model's maximum context length is 8192 tokens, however you requested 9000 tokens (8000 in your prompt; 1000 for the completion). Please reduce your prompt; or completion length.",
          type: 'invalid_request_error',
          param: 'messages',
          code: 'context_length_exceeded',
        },
      },
    ],
    [
      'Google Gemini input token count',
      400,
      {
        error: {
          code: 400,
          message: 'The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).',
          status: 'INVALID_ARGUMENT',
        },
      },
    ],
    [
      'Groq reduce the length of the messages',
      400,
      {
        error: {
          message: 'Please reduce the length of the messages or completion.',
          type: 'invalid_request_error',
          param: 'messages',
        },
      },
    ],
    ['generic context length exceeded', 400, { error: { message: 'Context length exceeded' } }],
    ['gateway request entity too large (as 400 text)', 400, '<html><body><h1>Request Entity Too Large</h1></body></html>'],
    [
      'llama.cpp exceeds the available context size',
      400,
      {
        error: {
          code: 400,
          message: 'the request exceeds the available context size, try increasing it',
          type: 'exceed_context_size_error',
          n_prompt_tokens: 5000,
          n_ctx: 4096,
        },
      },
    ],
    [
      'LM Studio greater than the context length',
      400,
      { error: 'The number of tokens to keep from the initial prompt is greater than the context length.' },
    ],
    [
      'Moonshot exceeded model token limit',
      400,
      { error: { message: 'Invalid request: Your request exceeded model token limit: 131072', type: 'invalid_request_error' } },
    ],
    [
      'vLLM maximum context length (top-level message)',
      400,
      {
        object: 'error',
        message:
          "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.",
        type: 'BadRequestError',
        param: null,
        code: 400,
      },
    ],
    [
      'OpenRouter maximum context length',
      400,
      {
        error: {
          message:
            "This endpoint's maximum context length is 200000 tokens. However, you requested about 245000 tokens (245000 of text input). Please reduce the length of either one, or use the \"middle-out\" transform to compress your prompt automatically.",
          code: 400,
        },
      },
    ],
    ['Ollama input length exceeds the context length', 400, { error: 'input length exceeds the context length' }],
    [
      'Mistral too large for model',
      400,
      {
        object: 'error',
        message: 'Prompt contains 40000 tokens and 0 draft tokens, too large for model with 32768 maximum context length',
        type: 'invalid_request_error',
        param: null,
        code: null,
      },
    ],
    ['structured code (Anthropic-style envelope)', 400, { type: 'error', error: { code: 'context_length_exceeded' } }],
    [
      'code nested in OpenRouter metadata',
      400,
      { error: { message: 'Provider returned error', code: 400, metadata: { raw: '{"error":{"code":"context_length_exceeded"}}' } } },
    ],
    ['HTTP 413 with no useful body', 413, 'Payload Too Large'],
    ['HTTP 413 request entity too large', 413, '<html><head><title>413 Request Entity Too Large</title></head></html>'],
  ]

  it.each(cases)('%s → overflow', (_name, statusCode, body) => {
    const result = classifyError(apiError({ statusCode, body, message: 'Bad Request' }))
    expect(result.kind).toBe('overflow')
    expect(result.error.name).toBe('ContextOverflowError')
    expect(result.error.statusCode).toBe(statusCode)
    expect(typeof result.error.responseBody).toBe('string')
  })

  // Each phrase of the contract on its own, so no case passes thanks to another phrase.
  const phrases = [
    'prompt is too long',
    'Your input exceeds the context window of this model',
    'maximum context length is 8192 tokens',
    'The input token count (40000) exceeds the maximum number of tokens allowed (32768).',
    'Please reduce the length of the messages.',
    'context length exceeded',
    'Request Entity Too Large',
    'the request exceeds the available context size, try increasing it',
    'requested tokens are greater than the context length',
    'Your request exceeded model token limit: 131072',
  ]

  it.each(phrases)('contract phrase %p in a 400 body → overflow', (phrase) => {
    expect(classifyError(apiError({ statusCode: 400, body: { error: { message: phrase } }, message: 'Bad Request' })).kind).toBe('overflow')
  })

  it.each(phrases)('contract phrase %p as a plain error message → overflow', (phrase) => {
    const result = classifyError(new Error(phrase))
    expect(result.kind).toBe('overflow')
    expect(result.error).toEqual({ name: 'ContextOverflowError', message: phrase })
  })

  it('uses the provider message as the record message', () => {
    const result = classifyError(apiError({ statusCode: 400, body: cases[0][2], message: 'Bad Request' }))
    expect(result.error).toEqual({
      name: 'ContextOverflowError',
      message: 'prompt is too long: 208310 tokens > 200000 maximum',
      statusCode: 400,
      responseBody: JSON.stringify(cases[0][2]),
    })
  })

  it('detects overflow from the error message alone (no body)', () => {
    const result = classifyError(apiError({ statusCode: 400, message: "This model's maximum context length is 16385 tokens." }))
    expect(result.kind).toBe('overflow')
  })

  it('detects overflow in a mid-stream error object (no status)', () => {
    const result = classifyError({ message: 'Context length exceeded', type: 'invalid_request_error', code: 'context_length_exceeded' })
    expect(result.kind).toBe('overflow')
  })

  it('overflow wins over a retryable status', () => {
    const result = classifyError(apiError({ statusCode: 429, body: { error: { code: 'context_length_exceeded', message: 'x' } } }))
    expect(result.kind).toBe('overflow')
  })
})

describe('classifyError: retryable', () => {
  const cases: Array<[string, number, unknown, Record<string, string>?]> = [
    ['Anthropic-style too_many_requests', 429, { type: 'error', error: { type: 'too_many_requests' } }],
    [
      'Anthropic rate_limit_error',
      429,
      { type: 'error', error: { type: 'rate_limit_error', message: 'Number of request tokens has exceeded your per-minute rate limit' } },
      { 'retry-after': '12' },
    ],
    ['Anthropic overloaded 529', 529, { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }],
    ['plain 503 text', 503, 'Service Unavailable'],
    ['503 without body', 503, undefined],
    ['OpenAI 500 server_error', 500, { error: { message: 'The server had an error while processing your request. Sorry about that!', type: 'server_error', param: null, code: null } }],
    ['OpenAI 503 engine overloaded', 503, { error: { message: 'The engine is currently overloaded, please try again later', type: 'server_error' } }],
    [
      'OpenAI 429 rate_limit_exceeded',
      429,
      {
        error: {
          message: 'Rate limit reached for gpt-4o in organization org-abc on tokens per min (TPM): Limit 30000, Used 29000, Requested 2000. Please try again in 2s.',
          type: 'tokens',
          param: null,
          code: 'rate_limit_exceeded',
        },
      },
      { 'retry-after-ms': '2000', 'x-ratelimit-remaining-tokens': '0' },
    ],
    [
      'Groq 429',
      429,
      { error: { message: 'Rate limit reached for model `llama-3.3-70b-versatile` in organization `org_x` on requests per minute (RPM): Limit 30, Used 30, Requested 1. Please try again in 2s.', type: 'requests', code: 'rate_limit_exceeded' } },
    ],
    ['Google 429 RESOURCE_EXHAUSTED', 429, { error: { code: 429, message: 'Resource has been exhausted (e.g. check quota).', status: 'RESOURCE_EXHAUSTED' } }],
    ['Google 503 UNAVAILABLE', 503, { error: { code: 503, message: 'The model is overloaded. Please try again later.', status: 'UNAVAILABLE' } }],
    ['OpenRouter 429 in body', 429, { error: { message: 'Rate limit exceeded: free-models-per-day', code: 429 } }],
    ['Azure 408', 408, { error: { code: 'Timeout', message: 'The operation was timeout.' } }],
    ['409 conflict', 409, { error: { message: 'conflict' } }],
    ['400 with structured overloaded_error', 400, { error: { type: 'overloaded_error' } }],
    ['400 with rate_limit_exceeded code', 400, { error: { code: 'rate_limit_exceeded', message: 'slow down' } }],
    ['Ollama 500 string error', 500, { error: 'llama runner process has terminated: signal: killed' }],
    [
      'OpenAI 429 rate limit whose message links to the billing page',
      429,
      {
        error: {
          message:
            'Rate limit reached for gpt-4o-mini in organization org-abc on requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 20s. Visit https://platform.openai.com/account/rate-limits to learn more. You can increase your rate limit by adding a payment method to your account at https://platform.openai.com/account/billing.',
          type: 'requests',
          param: null,
          code: 'rate_limit_exceeded',
        },
      },
    ],
    [
      'Gemini free-tier per-minute quota with RetryInfo',
      429,
      {
        error: {
          code: 429,
          message:
            'You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits. Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_free_tier_requests, limit: 15',
          status: 'RESOURCE_EXHAUSTED',
          details: [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '42s' }],
        },
      },
    ],
    ['vLLM 500 top-level', 500, { object: 'error', message: 'Internal server error', type: 'InternalServerError', param: null, code: 500 }],
  ]

  // Rest parameters: jest would take a fourth named parameter for a `done` callback.
  it.each(cases)('%s → retryable', (...row) => {
    const [, statusCode, body, headers] = row
    const result = classifyError(apiError({ statusCode, body, headers, isRetryable: false }))
    expect(result.kind).toBe('retryable')
    expect(result.error.name).toBe('APIError')
    expect(result.error.isRetryable).toBe(true)
    expect(result.error.statusCode).toBe(statusCode)
  })

  it('keeps the retry headers for the delay', () => {
    const result = classifyError(
      apiError({ statusCode: 429, body: { type: 'error', error: { type: 'too_many_requests' } }, headers: { 'retry-after': '3', 'x-request-id': 'req_1' } }),
    )
    expect(result.headers).toEqual({ 'retry-after': '3', 'x-request-id': 'req_1' })
    expect(result.error.responseHeaders).toEqual({ 'retry-after': '3', 'x-request-id': 'req_1' })
  })

  it('takes Google RetryInfo from the body as a delay header', () => {
    const body = {
      error: {
        code: 429,
        message: 'Resource has been exhausted (e.g. check quota).',
        status: 'RESOURCE_EXHAUSTED',
        details: [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '17s' }],
      },
    }
    const result = classifyError(apiError({ statusCode: 429, body }))
    expect(result.kind).toBe('retryable')
    expect(result.headers).toEqual({ 'retry-after-ms': '17000' })
    expect(result.error.responseHeaders).toBeUndefined()
  })

  it('a mid-stream reset (status 200, cause TypeError: terminated) is retryable', () => {
    const cause = new TypeError('terminated')
    ;(cause as Error).cause = withCode('other side closed', 'UND_ERR_SOCKET')
    const result = classifyError(apiError({ statusCode: 200, message: 'Failed to process successful response', cause, isRetryable: true }))
    expect(result.kind).toBe('retryable')
    expect(result.error.message).toBe('Failed to process successful response: terminated: other side closed')
  })

  it('status 200 with a non-network cause is fatal', () => {
    const result = classifyError(apiError({ statusCode: 200, message: 'Invalid JSON response', cause: new SyntaxError('Unexpected token') }))
    expect(result.kind).toBe('fatal')
  })

  const network: Array<[string, () => unknown]> = [
    ['ECONNRESET code in cause', () => new TypeError('fetch failed', { cause: withCode('read ECONNRESET', 'ECONNRESET') })],
    ['ECONNREFUSED code in cause', () => new TypeError('fetch failed', { cause: withCode('connect ECONNREFUSED 127.0.0.1:1', 'ECONNREFUSED') })],
    ['socket hang up', () => new Error('socket hang up')],
    ['fetch failed without cause', () => new TypeError('fetch failed')],
    ['terminated', () => new TypeError('terminated')],
    ['ETIMEDOUT in message', () => new Error('connect ETIMEDOUT 10.0.0.1:443')],
    ['EPIPE code', () => withCode('write EPIPE', 'EPIPE')],
    ['undici headers timeout', () => new Error('request failed', { cause: withCode('Headers Timeout Error', 'UND_ERR_HEADERS_TIMEOUT') })],
    ['AbortSignal.timeout', () => new DOMException('The operation was aborted due to timeout', 'TimeoutError')],
    ['deep cause chain', () => new Error('a', { cause: new Error('b', { cause: new Error('c', { cause: withCode('d', 'ECONNRESET') }) }) })],
    [
      'AggregateError of refused connections',
      () => new TypeError('fetch failed', { cause: new AggregateError([withCode('connect ECONNREFUSED ::1:1', 'ECONNREFUSED')], '') }),
    ],
    [
      'SDK network APICallError (no status, isRetryable)',
      () =>
        apiError({
          message: 'Cannot connect to API: connect ECONNREFUSED 127.0.0.1:1',
          isRetryable: true,
          cause: withCode('connect ECONNREFUSED 127.0.0.1:1', 'ECONNREFUSED'),
        }),
    ],
    ['SDK network APICallError (socket hang up cause)', () => apiError({ message: 'Cannot connect to API: socket hang up', isRetryable: true, cause: new Error('socket hang up') })],
  ]

  it.each(network)('%s → retryable', (_name, make) => {
    const result = classifyError(make())
    expect(result.kind).toBe('retryable')
    expect(result.error.isRetryable).toBe(true)
  })

  it('a cause deeper than 5 levels is not followed', () => {
    let error: Error = withCode('reset', 'ECONNRESET')
    for (let i = 0; i < 6; i++) error = new Error(`level ${i}`, { cause: error })
    expect(classifyError(error).kind).toBe('fatal')
  })

  it('StreamIdleTimeoutError is retryable and keeps its own record', () => {
    const result = classifyError(new StreamIdleTimeoutError(30000))
    expect(result).toEqual({
      kind: 'retryable',
      error: { name: 'StreamIdleTimeoutError', message: 'the model stream sent nothing for 30000 ms', idleMs: 30000 },
      headers: {},
    })
  })

  it('a mid-stream Anthropic error object (no status) is retryable', () => {
    const result = classifyError({ type: 'overloaded_error', message: 'Overloaded' })
    expect(result.kind).toBe('retryable')
    expect(result.error).toMatchObject({ name: 'APIError', message: 'Overloaded', isRetryable: true })
  })
})

describe('classifyError: capacity and "try again" wording of gateways and text-only providers', () => {
  // One row per pattern. Each arrives where the status says nothing (400, or none mid-stream),
  // so only the wording can tell that another attempt may succeed.
  const rows: Array<[string, unknown]> = [
    ['try again later (text body)', apiError({ statusCode: 400, body: 'The service is busy right now. Please try again later.' })],
    ['try your request again shortly', { error: { message: 'Something went wrong on our side, try your request again shortly' } }],
    ['retry your request', apiError({ statusCode: 400, body: { error: { message: 'An error occurred while processing. Please retry your request.' } } })],
    ['at capacity (Copilot-style gateway)', apiError({ statusCode: 400, body: { error: { message: 'Selected model is at capacity. Please try a different model.' } } })],
    ['insufficient / no capacity', { error: { message: 'No capacity available for model claude-x on this endpoint' } }],
    ['capacity constraints', 'Due to capacity constraints, this request could not be served'],
    ['high demand', apiError({ statusCode: 400, body: 'We are currently experiencing high demand. Please be patient.' })],
    ['high concurrency (Zhipu)', apiError({ statusCode: 400, body: { error: { code: '1302', message: 'High concurrency usage of this API, please reduce concurrency or contact customer service' } } })],
    ['server is busy (DeepSeek)', { error: { message: 'Server is busy', type: 'service_busy' } }],
    ['no healthy upstream (Envoy, text only)', apiError({ statusCode: 200, body: 'no healthy upstream', message: 'Invalid JSON response' })],
    ['upstream connect error (Envoy)', 'upstream connect error or disconnect/reset before headers. reset reason: overflow'],
    ['bad gateway page on a 400', apiError({ statusCode: 400, body: '<html><body><h1>Bad Gateway</h1></body></html>' })],
    ['model is currently loading (Hugging Face)', apiError({ statusCode: 400, body: { error: 'Model meta/x is currently loading', estimated_time: 20 } })],
    ['resource has been exhausted (text only)', { message: 'Some resource has been exhausted' }],
    ['internal error mid-stream (Gemini)', { error: { message: 'Internal error encountered.' } }],
    ['temporarily unable', apiError({ statusCode: 400, body: 'The provider is temporarily unable to serve your request' })],
  ]

  it.each(rows)('%s → retryable', (_name, error) => {
    expect(classifyError(error).kind).toBe('retryable')
  })

  it.each([
    ['a 400 that asks to fix the request and try again', apiError({ statusCode: 400, body: { error: { message: 'Invalid image. Please make sure the image is valid and try again.' } } })],
    ['a 404 that says to try pulling the model', apiError({ statusCode: 404, body: { error: 'model "llama9" not found, try pulling it first' } })],
    ['a spent quota that says to try again later', apiError({ statusCode: 429, body: { error: { message: 'Insufficient credits. Add more and try again later.' } } })],
  ])('%s stays fatal', (_name, error) => {
    expect(classifyError(error).kind).toBe('fatal')
  })
})

describe('classifyError: not retryable', () => {
  it('400 no_kv_space → fatal APIError with the provider message', () => {
    const body = '{"error":{"message":"no_kv_space"}}'
    const result = classifyError(apiError({ statusCode: 400, body, message: 'Bad Request', isRetryable: false }))
    expect(result).toEqual({
      kind: 'fatal',
      error: { name: 'APIError', message: 'no_kv_space', statusCode: 400, isRetryable: false, responseBody: body },
      headers: {},
    })
  })

  const cases: Array<[string, number, unknown, ErrorKind, string]> = [
    [
      'OpenAI 429 insufficient_quota',
      429,
      {
        error: {
          message: 'You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.',
          type: 'insufficient_quota',
          param: null,
          code: 'insufficient_quota',
        },
      },
      'fatal',
      'APIError',
    ],
    [
      'Google quota exceeded without a retry delay',
      429,
      { error: { code: 429, message: 'Quota exceeded for quota metric \'Generate Content API requests per day\'', status: 'RESOURCE_EXHAUSTED' } },
      'fatal',
      'APIError',
    ],
    ['OpenAI billing hard limit', 429, { error: { message: 'Billing hard limit has been reached', type: 'insufficient_quota' } }, 'fatal', 'APIError'],
    ['503 insufficient_quota (SDK says retryable)', 503, { error: { code: 'insufficient_quota', message: 'quota' } }, 'fatal', 'APIError'],
    [
      'Anthropic credit balance',
      400,
      { type: 'error', error: { type: 'invalid_request_error', message: 'Your credit balance is too low to access the Anthropic API.' } },
      'fatal',
      'APIError',
    ],
    [
      'Azure content_filter on 400',
      400,
      {
        error: {
          message: "The response was filtered due to the prompt triggering Azure OpenAI's content management policy.",
          type: null,
          param: 'prompt',
          code: 'content_filter',
          status: 400,
          innererror: { code: 'ResponsibleAIPolicyViolation' },
        },
      },
      'fatal',
      'APIError',
    ],
    ['500 content moderation', 500, { error: { message: 'Request flagged by content moderation', type: 'server_error' } }, 'fatal', 'APIError'],
    ['429 with request refused', 429, { error: { message: 'The request was refused by the safety system.' } }, 'fatal', 'APIError'],
    ['OpenAI 401 invalid key', 401, { error: { message: 'Incorrect API key provided: sk-abc***xyz.', type: 'invalid_request_error', param: null, code: 'invalid_api_key' } }, 'auth', 'ProviderAuthError'],
    ['Anthropic 401', 401, { type: 'error', error: { type: 'authentication_error', message: 'invalid x-api-key' } }, 'auth', 'ProviderAuthError'],
    ['Google 403', 403, { error: { code: 403, message: 'Method doesn\'t allow unregistered callers.', status: 'PERMISSION_DENIED' } }, 'auth', 'ProviderAuthError'],
    ['404 model not found', 404, { error: { message: 'The model `gpt-9` does not exist or you do not have access to it.', type: 'invalid_request_error', code: 'model_not_found' } }, 'fatal', 'APIError'],
    ['Ollama 404', 404, { error: 'model "llama9" not found, try pulling it first' }, 'fatal', 'APIError'],
    ['422 validation', 422, { detail: [{ loc: ['body', 'messages'], msg: 'field required' }] }, 'fatal', 'APIError'],
  ]

  it.each(cases)('%s (HTTP %i)', (_name, statusCode, body, kind, name) => {
    const result = classifyError(apiError({ statusCode, body, isRetryable: statusCode >= 429 }))
    expect(result.kind).toBe(kind)
    expect(result.error.name).toBe(name)
    if (name === 'APIError') expect(result.error.isRetryable).toBe(false)
  })

  it('401 → ProviderAuthError record', () => {
    const body = { type: 'error', error: { type: 'authentication_error', message: 'invalid x-api-key' } }
    const result = classifyError(apiError({ statusCode: 401, body, message: 'Unauthorized' }))
    expect(result.error).toEqual({ name: 'ProviderAuthError', message: 'invalid x-api-key', statusCode: 401, responseBody: JSON.stringify(body) })
  })

  it('a plain Error is fatal UnknownError', () => {
    expect(classifyError(new Error('boom'))).toEqual({ kind: 'fatal', error: { name: 'UnknownError', message: 'boom' }, headers: {} })
  })

  it('an AbortError is not a network failure', () => {
    expect(classifyError(new DOMException('This operation was aborted', 'AbortError')).kind).toBe('fatal')
  })

  it('an APICallError 400 mentioning a timeout parameter is not a network failure', () => {
    const result = classifyError(apiError({ statusCode: 400, body: { error: { message: 'Invalid value for timeout' } }, message: 'Invalid value for timeout' }))
    expect(result.kind).toBe('fatal')
  })

  it.each([[null], [undefined], [42], ['boom'], [{ foo: 1 }]])('non-Error value %p → fatal UnknownError', (value) => {
    const result = classifyError(value)
    expect(result.kind).toBe('fatal')
    expect(result.error.name).toBe('UnknownError')
    expect(typeof result.error.message).toBe('string')
  })

  it('other turnchart errors keep their record', () => {
    expect(classifyError(new MessageAbortedError()).error.name).toBe('MessageAbortedError')
  })
})

describe('classifyError: the stored record', () => {
  const secretUrl = 'https://generativelanguage.googleapis.com/v1beta/models/gemini:streamGenerateContent?key=SECRET-KEY-123'

  const errors: Array<[string, number | undefined, unknown]> = [
    ['fatal', 400, { error: { message: 'no_kv_space' } }],
    ['retryable', 503, 'upstream error'],
    ['overflow', 413, 'too large'],
    ['auth', 401, { error: { message: 'bad key' } }],
    ['network', undefined, undefined],
  ]

  it.each(errors)('%s record holds no URL, request body or Authorization header', (_name, statusCode, body) => {
    const error = apiError({
      statusCode,
      body,
      url: secretUrl,
      message: `request to ${secretUrl} failed`,
      isRetryable: statusCode === undefined,
      cause: statusCode === undefined ? withCode(`connect ECONNREFUSED (${secretUrl})`, 'ECONNREFUSED') : undefined,
      requestBodyValues: { messages: [{ role: 'user', content: 'TOP-SECRET-PROMPT' }], api_key: 'sk-request-secret' },
      headers: {
        'content-type': 'application/json',
        authorization: 'Bearer sk-live-SECRET',
        'set-cookie': 'session=SECRET-COOKIE',
        'x-ratelimit-remaining-requests': '0',
        'X-Request-Id': 'req_123',
      },
    })
    // The request headers sometimes ride along on wrapped errors: they must not leak either.
    Object.assign(error, { requestHeaders: { authorization: 'Bearer sk-live-SECRET' } })
    const result = classifyError(error)
    const stored = JSON.stringify(result)
    expect(stored).not.toContain('SECRET')
    expect(stored).not.toContain('googleapis.com')
    expect(stored).not.toMatch(/authorization/i)
    expect(stored).not.toContain('set-cookie')
    expect(stored).not.toContain('sk-request-secret')
    expect(JSON.parse(JSON.stringify(result.error))).toEqual(result.error)
    if (result.error.responseHeaders) {
      expect(result.error.responseHeaders).toEqual({
        'content-type': 'application/json',
        'x-ratelimit-remaining-requests': '0',
        'x-request-id': 'req_123',
      })
    }
  })

  // classifyError redacts its own output with the redactor it is given (the engine's, which knows
  // its configured keys): a key in a message the provider echoed or an error quoted is gone from
  // the record, whatever the error classes' own redaction (known key shapes only) catches.
  const key = 'gateway-token-7f3a9c2e'
  it.each([
    ['a provider error', () => apiError({ statusCode: 401, message: `Incorrect API key provided: ${key}` })],
    ['an overflow (a record built plainly)', () => apiError({ statusCode: 413, message: `request too large for key ${key}` })],
    ['a plain error', () => new Error(`fetch failed: the gateway refused ${key}`)],
    ['a provider error object', () => ({ type: 'error', error: { type: 'invalid_request_error', message: `key ${key} is revoked` } })],
    ['a string', () => `the key ${key} was refused`],
  ])("%s: the record carries no configured key (classifyError's own redaction)", (_kind, make) => {
    const stored = JSON.stringify(classifyError(make(), createRedactor([key])))
    expect(stored).not.toContain(key)
    expect(stored).toContain('[redacted]')
  })

  it('truncates the response body to 8 KB', () => {
    const body = JSON.stringify({ error: { message: 'no_kv_space', padding: 'x'.repeat(20000) } })
    const result = classifyError(apiError({ statusCode: 400, body }))
    const stored = result.error.responseBody as string
    expect(stored.length).toBeLessThanOrEqual(8 * 1024)
    expect(stored.startsWith('{"error":{"message":"no_kv_space"')).toBe(true)
    expect(stored.endsWith('[truncated]')).toBe(true)
  })

  it('isRetryable reflects our classification, not the SDK flag', () => {
    const quota = classifyError(apiError({ statusCode: 500, body: { error: { code: 'insufficient_quota' } }, isRetryable: true }))
    expect(quota.error.isRetryable).toBe(false)
    const conflict = classifyError(apiError({ statusCode: 409, body: 'conflict', isRetryable: false }))
    expect(conflict.error.isRetryable).toBe(true)
  })

  it('falls back to the error message when the body has none', () => {
    const result = classifyError(apiError({ statusCode: 502, body: '<html>Bad Gateway</html>', message: 'Bad Gateway' }))
    expect(result.error.message).toBe('Bad Gateway')
  })
})
