/**
 * Removes credentials from whatever turnchart stores or publishes about a failure: error
 * messages, provider response bodies and headers, nested JSON, JSON inside strings. Pure:
 * no I/O, no state besides the secrets it was built with.
 *
 * Three nets, each catching what the others miss:
 * 1. the exact secrets the app configured (`EngineOptions.redact.secrets`), in raw, JSON-escaped
 *    and URL-encoded form, wherever they appear;
 * 2. credential-bearing names followed by a value: auth headers (`Authorization`, `x-api-key`,
 *    `api-key`, `x-goog-api-key`…), `Bearer`/`Basic` schemes, key-like query parameters
 *    (`?key=`, `api_key=`, `token=`…) and JSON fields of those names;
 * 3. the known shapes of provider keys (`sk-…`, `sk-ant-…`, `AIza…`, `gsk_…`, JWTs…);
 * 4. the password of a URL (`postgres://app:secret@db/…`): connection strings carry one.
 *
 * What is kept: everything else, so a stored body still says its status, type and message.
 */

/** What a removed credential is replaced with. */
export const REDACTED = '[redacted]'

/** Secrets shorter than this are ignored: replacing `"a"` everywhere would destroy the text, not protect a key. */
export const minSecretLength = 6

/** Removes credentials from text and from JSON-like values. */
export interface Redactor {
  /** The text with every credential replaced by `[redacted]`. */
  text(text: string): string
  /** A copy of `value` (plain objects, arrays, strings) with credentials removed; other values as they are. */
  value<T>(value: T): T
}

/** Header and field names whose value is a credential (lower case, compared case-insensitively). */
const secretFieldNames: readonly string[] = [
  'authorization',
  'proxy-authorization',
  'x-api-key',
  'api-key',
  'apikey',
  'api_key',
  'x-goog-api-key',
  'x-auth-token',
  'x-access-token',
  'access_token',
  'access-token',
  'refresh_token',
  'client_secret',
  'openai-api-key',
  'anthropic-api-key',
  'ocp-apim-subscription-key',
  'cookie',
  'set-cookie',
  'password',
  'secret',
  'token',
  'key',
]

/** Query parameters whose value is a credential. */
const secretQueryNames = ['key', 'api_key', 'api-key', 'apikey', 'access_token', 'token', 'auth', 'secret', 'password', 'client_secret', 'sig', 'signature']

/** Shapes of provider keys: redacted even when nothing names them. */
const keyPatterns: readonly RegExp[] = [
  /\bsk-ant-[A-Za-z0-9_-]{8,}/g, // Anthropic
  /\bsk-[A-Za-z0-9_*-]{8,}/g, // OpenAI (sk-, sk-proj-), DeepSeek, OpenRouter (sk-or-v1-)
  /\bAIza[0-9A-Za-z_-]{20,}/g, // Google
  /\bgsk_[A-Za-z0-9]{16,}/g, // Groq
  /\bxai-[A-Za-z0-9]{16,}/g, // xAI
  /\bpplx-[A-Za-z0-9]{16,}/g, // Perplexity
  /\bhf_[A-Za-z0-9]{16,}/g, // Hugging Face
  /\br8_[A-Za-z0-9]{16,}/g, // Replicate
  /\bfw_[A-Za-z0-9]{16,}/g, // Fireworks
  /\bgh[pousr]_[A-Za-z0-9]{20,}/g, // GitHub tokens
  /\bgithub_pat_[A-Za-z0-9_]{20,}/g,
  /\bxox[abprs]-[A-Za-z0-9-]{10,}/g, // Slack
  /\bA(?:KIA|SIA)[0-9A-Z]{16}\b/g, // AWS access key ids
  /\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g, // JWTs
]

/**
 * What every pattern here needs somewhere in the text (a name's `:` or `=`, a URL's `@`, a scheme,
 * a key's prefix): one test first, so that text with none of it (most of what a turn stores:
 * finish reasons, ids, plain prose) skips the nineteen replaces. A new pattern adds its mark here,
 * and its example to test/security/redact-secrets.test.ts, which has one for each.
 */
const mayHoldCredential = /[:=@]|Bearer|Basic|sk-|AIza|gsk_|xai-|pplx-|hf_|r8_|fw_|gh[pousr]_|github_pat_|xox[abprs]-|A[KS]IA|eyJ/

// A value runs until whitespace, a quote, a backslash (an escaped quote in JSON inside a
// string), or a separator of headers, JSON or queries.
const valueChars = `[^\\s"'\\\\,;&#<>{}\\[\\]]+`
const names = [...secretFieldNames].sort((a, b) => b.length - a.length).map(escapeRegExp).join('|')
/** `authorization: Bearer x`, `"x-api-key":"x"`, `\"api-key\": \"x\"`, `password=x`. */
const namedValue = new RegExp(
  `((?<![\\w-])(?:${names})\\\\?["']?\\s*[:=]\\s*\\\\?["']?\\s*)((?:Bearer|Basic|Token|Bot)\\s+)?${valueChars}`,
  'gi',
)
/** `Bearer x` anywhere (an undici message quoting the header value, a log line). */
const schemeValue = /\b(Bearer|Basic)\s+(?!\[redacted\])[^\s"'\\,;<>{}[\]]{4,}/g
/** `?key=x` / `&api_key=x` in any URL. */
const queryValue = new RegExp(`([?&;](?:${secretQueryNames.map(escapeRegExp).join('|')})=)[^&#\\s"'\\\\<>]+`, 'gi')

/** `scheme://user:password@host`: the password of a URL's user info (a connection string's). */
const urlPassword = /(\b[a-z][a-z0-9+.-]*:\/\/[^\s:/@"'<>]*:)[^\s/@"'<>]+@/gi

/**
 * A redactor for the given app secrets (e.g. the provider's API key) on top of the patterns.
 *
 * @example
 * const redact = createRedactor([process.env.OPENAI_API_KEY!])
 * redact.text('{"headers":{"authorization":"Bearer sk-abc123456789"}}')
 * // '{"headers":{"authorization":"[redacted]"}}'
 * redact.value({ error: { message: 'bad key my-key-123456' } }) // message: 'bad key [redacted]' when my-key-123456 is a secret
 */
export function createRedactor(secrets: readonly string[] = []): Redactor {
  const exact = secretVariants(secrets)
  const text = (input: string): string => {
    let out = input
    for (const secret of exact) if (out.includes(secret)) out = out.split(secret).join(REDACTED)
    if (!mayHoldCredential.test(out)) return out
    out = out.replace(namedValue, (_match, prefix: string) => `${prefix}${REDACTED}`)
    out = out.replace(schemeValue, (_match, scheme: string) => `${scheme} ${REDACTED}`)
    out = out.replace(queryValue, (_match, prefix: string) => `${prefix}${REDACTED}`)
    out = out.replace(urlPassword, (_match, prefix: string) => `${prefix}${REDACTED}@`)
    for (const pattern of keyPatterns) out = out.replace(pattern, REDACTED)
    return out
  }
  const value = <T>(input: T): T => redactValue(input, text, new WeakMap()) as T
  return { text, value }
}

/** The patterns only, for places that do not know the engine's secrets (`serializeError`). */
export const redactSecrets: Redactor = createRedactor()

/** The secrets as they may appear: raw, JSON-escaped, URL-encoded; longest first so a longer one is never cut by a shorter. */
function secretVariants(secrets: readonly string[]): string[] {
  const variants = new Set<string>()
  for (const secret of secrets) {
    if (typeof secret !== 'string' || secret.length < minSecretLength) continue
    variants.add(secret)
    variants.add(JSON.stringify(secret).slice(1, -1))
    variants.add(JSON.stringify(JSON.stringify(secret).slice(1, -1)).slice(1, -1)) // JSON in a JSON string
    try {
      variants.add(encodeURIComponent(secret))
    } catch {
      // a lone surrogate cannot be URL-encoded, so it cannot appear encoded either
    }
  }
  return [...variants].sort((a, b) => b.length - a.length)
}

const secretFields = new Set(secretFieldNames)

function redactValue(value: unknown, text: (s: string) => string, seen: WeakMap<object, unknown>): unknown {
  if (typeof value === 'string') return text(value)
  if (typeof value !== 'object' || value === null) return value
  if (seen.has(value)) return seen.get(value)
  if (Array.isArray(value)) {
    const copy: unknown[] = []
    seen.set(value, copy)
    for (const item of value) copy.push(redactValue(item, text, seen))
    return copy
  }
  const proto = Object.getPrototypeOf(value)
  if (proto !== Object.prototype && proto !== null) return value // class instances (Dates, Buffers) are not error records
  const copy: Record<string, unknown> = {}
  seen.set(value, copy)
  for (const [key, field] of Object.entries(value)) {
    copy[key] = secretFields.has(key.toLowerCase()) && typeof field === 'string' ? REDACTED : redactValue(field, text, seen)
  }
  return copy
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}
