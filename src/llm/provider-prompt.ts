/**
 * `ModelMessage[]` (what turnchart builds from stored parts) → the provider-level prompt that a
 * model's `doStream` takes. The prompt shapes of `LanguageModelV3` and `LanguageModelV4` agree
 * on the parts turnchart sends: system text, user text, assistant text / reasoning / tool calls,
 * tool results. This replaces the AI SDK's internal `convertToLanguageModelPrompt` (not a public
 * API): no zod pass over the history, no downloads (a file URL goes to the provider as a URL).
 */
import type { ModelMessage } from 'ai'

type ProviderOptions = Record<string, Record<string, unknown>> | undefined

/** One message of the provider prompt (the subset of V3/V4 `LanguageModelPrompt` turnchart sends). */
export type ProviderMessage =
  | { role: 'system'; content: string; providerOptions?: ProviderOptions }
  | { role: 'user'; content: ProviderContentPart[]; providerOptions?: ProviderOptions }
  | { role: 'assistant'; content: ProviderContentPart[]; providerOptions?: ProviderOptions }
  | { role: 'tool'; content: ProviderContentPart[]; providerOptions?: ProviderOptions }

export type ProviderContentPart = { type: string; providerOptions?: ProviderOptions } & Record<string, unknown>

/** A message part turnchart cannot send to a provider (it never builds one itself). */
export class UnsupportedPromptPartError extends Error {
  override readonly name = 'UnsupportedPromptPartError'
  constructor(
    readonly role: string,
    readonly partType: string,
  ) {
    super(`a ${role} message part of type '${partType}' cannot be sent by turnchart (text, reasoning, tool calls and results, images and files)`)
  }
  static isInstance(error: unknown): error is UnsupportedPromptPartError {
    return error instanceof Error && error.name === 'UnsupportedPromptPartError'
  }
}

/**
 * Builds the provider prompt: the system message first, then the messages, consecutive tool
 * messages merged (as the AI SDK does), empty assistant text parts dropped.
 *
 * @example
 * toProviderPrompt('Be brief.', [{ role: 'user', content: 'hi' }])
 * // [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: [{ type: 'text', text: 'hi' }] }]
 */
export function toProviderPrompt(system: string | undefined, messages: ModelMessage[], version: 'v3' | 'v4' = 'v3', cache?: ProviderPromptCache): ProviderMessage[] {
  const out: ProviderMessage[] = []
  if (system !== undefined) out.push({ role: 'system', content: system })
  for (const message of messages) {
    const known = cache?.get(message)
    if (known && known.version === version) {
      push(out, known.message)
      continue
    }
    const converted = providerMessage(message, version)
    if (!converted) continue
    cache?.set(message, { version, message: converted })
    push(out, converted)
  }
  return out
}

/**
 * Provider messages already converted, by model message (a running turn sends the same history
 * objects at every step: each is converted once). Only for messages that are not changed after
 * they were converted.
 */
export type ProviderPromptCache = WeakMap<ModelMessage, { version: 'v3' | 'v4'; message: ProviderMessage }>

/** Appends `message`; consecutive tool messages merge into a new one (a cached message is never changed). */
function push(out: ProviderMessage[], message: ProviderMessage): void {
  const last = out.at(-1)
  if (message.role === 'tool' && last?.role === 'tool') out[out.length - 1] = { ...last, content: [...last.content, ...message.content] }
  else out.push(message)
}

/** One model message as the provider's; undefined for a role the prompt has not (skipped, as before). */
function providerMessage(message: ModelMessage, version: 'v3' | 'v4'): ProviderMessage | undefined {
  const providerOptions = message.providerOptions as ProviderOptions
  switch (message.role) {
    case 'system':
      return { role: 'system', content: message.content, ...(providerOptions ? { providerOptions } : {}) }
    case 'user':
    case 'assistant': {
      const parts = typeof message.content === 'string' ? [{ type: 'text' as const, text: message.content }] : (message.content as ProviderContentPart[])
      const content = parts
        .filter((part) => part.type !== 'text' || part.text !== '' || part.providerOptions != null)
        .map((part) => contentPart(message.role, part as ProviderContentPart, version))
      return { role: message.role, content, ...(providerOptions ? { providerOptions } : {}) }
    }
    case 'tool': {
      const content = (message.content as ProviderContentPart[]).map((part) => contentPart('tool', part, version))
      return { role: 'tool', content, ...(providerOptions ? { providerOptions } : {}) }
    }
  }
  return undefined
}

function contentPart(role: string, part: ProviderContentPart, version: 'v3' | 'v4'): ProviderContentPart {
  const providerOptions = part.providerOptions ? { providerOptions: part.providerOptions } : {}
  switch (part.type) {
    case 'text':
    case 'reasoning':
      return { type: part.type, text: part.text, ...providerOptions }
    case 'tool-call':
      if (role !== 'assistant') break
      return {
        type: 'tool-call',
        toolCallId: part.toolCallId,
        toolName: part.toolName,
        input: part.input,
        ...(part.providerExecuted ? { providerExecuted: true } : {}),
        ...providerOptions,
      }
    case 'image':
      if (role !== 'user') break
      return userFile(part, part.image, (part.mediaType as string | undefined) ?? 'image/*', version)
    case 'file': {
      if (role === 'user') return userFile(part, part.data, (part.mediaType as string | undefined) ?? 'application/octet-stream', version)
      // A file the model produced, sent back with its turn. V3 takes base64 or a URL as is;
      // V4 a tagged `{ type: 'data' | 'url' }`.
      if (role !== 'assistant') break
      const data = part.data
      const tagged = data instanceof URL ? { type: 'url', url: data } : { type: 'data', data }
      return { type: 'file', data: version === 'v4' ? tagged : data, mediaType: part.mediaType, ...(part.filename ? { filename: part.filename } : {}), ...providerOptions }
    }
    case 'tool-result':
      if (role === 'user') break
      return { type: 'tool-result', toolCallId: part.toolCallId, toolName: part.toolName, output: part.output, ...providerOptions }
  }
  throw new UnsupportedPromptPartError(role, String(part.type))
}

/**
 * An image or file of a user prompt as the provider's `file` part: an http(s) URL stays a URL
 * (the provider decides how to send it; turnchart downloads nothing), a `data:` URL becomes its
 * base64 and media type, bytes and base64 go as they are.
 */
function userFile(part: ProviderContentPart, raw: unknown, fallbackType: string, version: 'v3' | 'v4'): ProviderContentPart {
  let data = raw
  let mediaType = fallbackType
  if (typeof raw === 'string') {
    const inline = /^data:([^;,]+)?(?:;base64)?,(.*)$/is.exec(raw)
    if (inline) {
      data = inline[2]
      mediaType = (part.mediaType as string | undefined) ?? inline[1] ?? fallbackType
    } else if (/^https?:/i.test(raw)) data = new URL(raw)
  }
  const tagged = data instanceof URL ? { type: 'url', url: data } : { type: 'data', data }
  const providerOptions = part.providerOptions ? { providerOptions: part.providerOptions } : {}
  return { type: 'file', data: version === 'v4' ? tagged : data, mediaType, ...(part.filename ? { filename: part.filename } : {}), ...providerOptions }
}
