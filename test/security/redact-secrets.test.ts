import { createRedactor, redactSecrets, REDACTED } from '../../src/core/secrets/redact-secrets'

const key = 'zz-TurnchartDistinctKey-42'
const redact = createRedactor([key])

describe('redactSecrets: text', () => {
  const cases: Array<[string, string, string]> = [
    // [what, input, expected]
    ['Authorization header echoed as JSON', '{"authorization":"Bearer abc.def-123456"}', `{"authorization":"${REDACTED}"}`],
    ['Authorization header as a line', 'Authorization: Bearer abc123456', `Authorization: ${REDACTED}`],
    ['Basic auth', 'proxy-authorization: Basic dXNlcjpwYXNz', `proxy-authorization: ${REDACTED}`],
    ['x-api-key echoed', '{"x-api-key":"whatever-value-1"}', `{"x-api-key":"${REDACTED}"}`],
    ['api-key (Azure)', '{"api-key": "azure123456"}', `{"api-key": "${REDACTED}"}`],
    ['x-goog-api-key', 'x-goog-api-key=goog-value-99', `x-goog-api-key=${REDACTED}`],
    ['JSON inside a JSON string', '{"body":"{\\"x-api-key\\":\\"inner-secret-77\\"}"}', `{"body":"{\\"x-api-key\\":\\"${REDACTED}\\"}"}`],
    ['Bearer in an undici message', 'Headers.append: "Bearer opaque\u0000tail" is an invalid header value.', `Headers.append: "Bearer ${REDACTED}" is an invalid header value.`],
    ['key= in a URL', 'GET https://h/v1/models?key=AB12cd&alt=sse failed', `GET https://h/v1/models?key=${REDACTED}&alt=sse failed`],
    ['api_key= in a URL', 'https://h/x?foo=1&api_key=s3cr3t#frag', `https://h/x?foo=1&api_key=${REDACTED}#frag`],
    ['token= in a URL', 'https://h/x?token=tok123', `https://h/x?token=${REDACTED}`],
    ['a connection string\'s password', 'connect to postgres://app:s3cr3t-pw@db.internal:5432/app failed', `connect to postgres://app:${REDACTED}@db.internal:5432/app failed`],
    ['a URL with a user and no password: kept', 'postgres://app@db.internal/app', 'postgres://app@db.internal/app'],
    ['OpenAI key shape', 'Incorrect API key provided: sk-proj-abcDEF1234567890.', `Incorrect API key provided: ${REDACTED}.`],
    ['Anthropic key shape', 'key sk-ant-api03-abcdefghijklmnop rejected', `key ${REDACTED} rejected`],
    ['Google key shape', 'API key AIzaSyA1234567890abcdefghijklmnopqrstu not valid', `API key ${REDACTED} not valid`],
    ['Groq key shape', 'gsk_abcdefghijklmnopqrstuvwx', REDACTED],
    ['xAI key shape', 'xai-abcdefghijklmnop1234 denied', `${REDACTED} denied`],
    ['Perplexity key shape', 'pplx-abcdefghijklmnop1234', REDACTED],
    ['Hugging Face token shape', 'hf_abcdefghijklmnop1234', REDACTED],
    ['Replicate token shape', 'r8_abcdefghijklmnop1234', REDACTED],
    ['Fireworks key shape', 'fw_abcdefghijklmnop1234', REDACTED],
    ['GitHub token shape', 'ghp_abcdefghijklmnopqrst1234', REDACTED],
    ['GitHub fine-grained token', 'github_pat_abcdefghijklmnopqrst1234', REDACTED],
    ['Slack token shape', 'xoxb-1234567890-abcdef', REDACTED],
    ['AWS access key id', 'id AKIAABCDEFGHIJKLMNOP here', `id ${REDACTED} here`],
    ['JWT', 'token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U', `token ${REDACTED}`],
    ['nothing secret: kept', '{"error":{"message":"Rate limit reached","type":"rate_limit_error","code":429}}', '{"error":{"message":"Rate limit reached","type":"rate_limit_error","code":429}}'],
    ['words near names are kept', 'max_tokens: 4096; task-force-12345678; Unexpected token < in JSON', 'max_tokens: 4096; task-force-12345678; Unexpected token < in JSON'],
  ]
  test.each(cases)('%s', (_what, input, expected) => {
    expect(redactSecrets.text(input)).toBe(expected)
  })

  const exactCases: Array<[string, string, string]> = [
    ['the bare configured key', `Invalid key ${key} for this org`, `Invalid key ${REDACTED} for this org`],
    ['URL-encoded', `url=${encodeURIComponent(key + '/x')}`, `url=${REDACTED}`],
  ]
  test.each(exactCases)('configured secret: %s', (_what, input, expected) => {
    expect(createRedactor([key, key + '/x']).text(input)).toBe(expected)
  })

  test('a configured secret with a NUL, raw and JSON-escaped', () => {
    const nul = 'my\u0000weird-key-123'
    const r = createRedactor([nul])
    expect(r.text(`raw ${nul} end`)).toBe(`raw ${REDACTED} end`)
    expect(r.text(JSON.stringify({ m: `x ${nul}` }))).toBe(`{"m":"x ${REDACTED}"}`)
  })

  test('secrets too short to redact safely are ignored', () => {
    expect(createRedactor(['ab']).text('about')).toBe('about')
  })
})

describe('redactSecrets: values', () => {
  test('nested objects and arrays, by field name and by content; the input is not changed', () => {
    const input = {
      name: 'APIError',
      message: `bad ${key}`,
      statusCode: 401,
      responseHeaders: { 'X-Api-Key': 'plain-value-1', 'x-request-id': 'req_1' },
      nested: [{ authorization: 'Token abc' }, { text: 'see sk-abcdefghijklmnop' }],
    }
    const snapshot = JSON.parse(JSON.stringify(input))
    expect(redact.value(input)).toEqual({
      name: 'APIError',
      message: `bad ${REDACTED}`,
      statusCode: 401,
      responseHeaders: { 'X-Api-Key': REDACTED, 'x-request-id': 'req_1' },
      nested: [{ authorization: REDACTED }, { text: `see ${REDACTED}` }],
    })
    expect(input).toEqual(snapshot)
  })

  test('cycles and non-plain values', () => {
    const cyclic: Record<string, unknown> = { message: key }
    cyclic.self = cyclic
    const out = redact.value(cyclic)
    expect(out.message).toBe(REDACTED)
    expect(out.self).toBe(out)
    expect(redact.value(42)).toBe(42)
    expect(redact.value(null)).toBe(null)
  })
})
