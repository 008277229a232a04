/**
 * One LLM call as turnchart's own stream events.
 *
 * The model's `doStream` is called directly, for a `LanguageModelV3` (ai v6 providers) and a
 * `LanguageModelV4` (ai v7 providers) alike: the prompt is converted without the AI SDK's zod
 * pass over the whole history (provider-prompt), the tools' JSON schemas are computed once per
 * tool set (provider-tools), and the provider's stream is read in one loop. The stream parts
 * turnchart reads have the same shape in both versions; parts a version adds (V4 `ping`,
 * `custom`, `reasoning-file`) count as output or activity and are otherwise skipped.
 */
import { callHook } from '../core/hooks'
import { EmptyModelStreamError } from '../core/errors'
import { checkInput, type CheckableSchema } from '../tools/validate-tool-input'
import { untilAborted } from '../core/until-aborted'
import type { LanguageModelUsage, ModelMessage, ToolSet } from 'ai'
import type { ProviderLanguageModel } from './language-model'
import { toProviderPrompt, type ProviderPromptCache } from './provider-prompt'
import { prepareTools } from './provider-tools'
import type { PartProviderMetadata, TurnSettings } from '../core/types'

/** A normalized event of one model call. `providerMetadata` only when the provider sent some. */
export type ModelStreamEvent =
  /** The first chunk of the response arrived (streamText's `start-step`); `warnings`: what the provider said it ignored or changed (an unsupported `topK`). */
  | { type: 'start'; warnings?: ProviderWarning[] }
  | { type: 'text-start' | 'reasoning-start'; id: string; providerMetadata?: PartProviderMetadata }
  /** The provider's own stream part, passed on as it is: no object of turnchart's per delta. */
  | { type: 'text-delta' | 'reasoning-delta'; id: string; delta: string; providerMetadata?: PartProviderMetadata }
  | { type: 'text-end' | 'reasoning-end'; id: string; providerMetadata?: PartProviderMetadata }
  | { type: 'tool-input-start'; id: string; toolName: string }
  /** A complete tool call; `error` (the message stored on the tool part) when its input is unusable. */
  | { type: 'tool-call'; callId: string; toolName: string; input: unknown; error?: string; providerMetadata?: PartProviderMetadata }
  /** A file the model produced: base64 `data` or a `url`. */
  | { type: 'file'; mediaType: string; data?: string; url?: string; providerMetadata?: PartProviderMetadata }
  /** A source the model cited. */
  | { type: 'source'; sourceType: string; sourceId: string; url?: string; title?: string; mediaType?: string; filename?: string; providerMetadata?: PartProviderMetadata }
  | { type: 'finish'; finishReason: string; usage: LanguageModelUsage }
  | { type: 'error'; error: unknown }
  /** The call was aborted through `abortSignal`. */
  | { type: 'abort' }

export interface ModelStreamRequest {
  /** A V3 or V4 model object (checked by `resolveConfig`). */
  model: unknown
  system?: string
  messages: ModelMessage[]
  /** The user's tools (declared to the model without `execute`); omit for none. */
  tools?: ToolSet
  abortSignal: AbortSignal
  /** Called on every chunk the provider sends, also those that map to no event (idle timer). */
  onChunk?: () => void
  /** Call settings (temperature, maxOutputTokens, headers, providerOptions, toolChoice...), sent as they are. */
  settings?: Omit<TurnSettings, 'maxSteps'>
  /** The provider messages of `messages` converted by an earlier call (a turn's steps share their history). */
  promptCache?: ProviderPromptCache
  /** Structured output's response format (`await Output.object({ schema }).responseFormat`), sent as it is. */
  responseFormat?: unknown
  /** Where a throw (or a rejection) of a tool's `onInputStart` / `onInputDelta` / `onInputAvailable` goes; the stream goes on. */
  onHookError?: (error: unknown) => void
}

/** A provider's call warning, as it sent it (`{ type: 'unsupported', feature, details? }`, `{ type: 'other', message }`, …). */
export type ProviderWarning = Record<string, unknown> & { type: string }

/** The stream parts of V3 and V4 that turnchart reads (the same fields in both). */
type StreamPart =
  | { type: 'stream-start'; warnings?: ProviderWarning[] }
  | { type: 'response-metadata' | 'raw' | 'ping' }
  | { type: 'text-start' | 'reasoning-start' | 'text-end' | 'reasoning-end'; id: string; providerMetadata?: PartProviderMetadata }
  | { type: 'text-delta' | 'reasoning-delta'; id: string; delta: string; providerMetadata?: PartProviderMetadata }
  | { type: 'tool-input-start'; id: string; toolName: string; providerExecuted?: boolean }
  | { type: 'tool-input-delta'; id: string; delta: string }
  | { type: 'tool-input-end'; id: string }
  | { type: 'tool-call'; toolCallId: string; toolName: string; input: string; providerExecuted?: boolean; providerMetadata?: PartProviderMetadata }
  | { type: 'finish'; usage: ProviderUsage; finishReason: { unified: string } | string }
  | { type: 'error'; error: unknown }
  // V3: data is base64 or bytes; V4: a tagged `{ type: 'data', data } | { type: 'url', url }`.
  | { type: 'file'; mediaType: string; data: unknown; providerMetadata?: PartProviderMetadata }
  | { type: 'source'; sourceType: string; id: string; url?: string; title?: string; mediaType?: string; filename?: string; providerMetadata?: PartProviderMetadata }
  | { type: 'tool-result' | 'tool-approval-request' | 'custom' | 'reasoning-file' }

interface ProviderUsage {
  inputTokens?: { total?: number; noCache?: number; cacheRead?: number; cacheWrite?: number }
  outputTokens?: { total?: number; text?: number; reasoning?: number }
  raw?: unknown
}

/**
 * What hears a model call's events: called synchronously, in order, as each chunk is read.
 * Returning `false` stops the call (the rest of the response is cancelled).
 */
export type ModelEventHandler = (event: ModelStreamEvent) => boolean | void

/**
 * Streams one model call as `ModelStreamEvent`s, handed to `onEvent` as they are read: a push
 * loop, because an async generator between the provider's reader and the step costs promises
 * and microtasks on every delta. Resolves when the stream ended (after its `finish`, `abort` or
 * `error` event) or `onEvent` returned `false`. HTTP errors of the request and a broken stream
 * reject; an `error` part of the stream is an `error` event.
 *
 * @example
 * await modelStream({ model, messages, tools, abortSignal }, (event) => { if (event.type === 'text-delta') out += event.delta })
 */
export function modelStream(request: ModelStreamRequest, onEvent: ModelEventHandler): Promise<void> {
  return directStream(request.model as ProviderLanguageModel, request, onEvent)
}

/** The AI SDK's usage object from a provider's usage (V3 and V4 report the same fields). */
export function toLanguageModelUsage(usage: ProviderUsage | undefined): LanguageModelUsage {
  const input = usage?.inputTokens ?? {}
  const output = usage?.outputTokens ?? {}
  const total = input.total === undefined && output.total === undefined ? undefined : (input.total ?? 0) + (output.total ?? 0)
  return {
    inputTokens: input.total,
    inputTokenDetails: { noCacheTokens: input.noCache, cacheReadTokens: input.cacheRead, cacheWriteTokens: input.cacheWrite },
    outputTokens: output.total,
    outputTokenDetails: { textTokens: output.text, reasoningTokens: output.reasoning },
    totalTokens: total,
    raw: usage?.raw,
    reasoningTokens: output.reasoning,
    cachedInputTokens: input.cacheRead,
  } as LanguageModelUsage
}

// ---------------------------------------------------------------------------------------------
// Tool-call input.

/** The message stored on a tool part whose call cannot run. */
export function toolInputError(tools: ToolSet | undefined, toolName: string, error: unknown): string {
  const names = Object.keys(tools ?? {})
  // Own properties only: a model calling `constructor` or `__proto__` calls no tool.
  if (!tools || !Object.hasOwn(tools, toolName)) {
    return `unknown tool '${toolName}'; available: ${names.length ? names.join(', ') : '(none)'}`
  }
  const detail = error instanceof Error ? error.message : String(error)
  return `invalid input for tool '${toolName}': ${detail}`
}

/**
 * A V3 tool call's JSON input → the parsed input, or the error message for the tool part. As
 * streamText: an empty input is `{}`; an unusable input is kept parsed if it is JSON, else as text.
 */
async function parseToolInput(tools: ToolSet | undefined, toolName: string, text: string): Promise<{ input: unknown; error?: string }> {
  const schema = tools && Object.hasOwn(tools, toolName) ? prepareTools(tools).schemas.get(toolName) : undefined
  const parsed = text.trim() === '' ? { ok: true as const, value: {} } : await parseJson(text)
  if (!schema) return { input: parsed.ok ? parsed.value : text, error: toolInputError(tools, toolName, undefined) }
  if (!parsed.ok) return { input: text, error: toolInputError(tools, toolName, parsed.error) }
  const check = await checkInput(schema as CheckableSchema, parsed.value)
  return check.ok ? { input: check.value } : { input: parsed.value, error: toolInputError(tools, toolName, new Error(check.message)) }
}

/** JSON without prototype keys (as the AI SDK's secure parser); the error says why the text is unusable. */
async function parseJson(text: string): Promise<{ ok: true; value: unknown } | { ok: false; error: Error }> {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (error) {
    return { ok: false, error: new Error(`the input is not valid JSON: ${error instanceof Error ? error.message : String(error)}`) }
  }
  if (/__proto__|constructor/.test(text) && hasPrototypeKey(value)) {
    return { ok: false, error: new Error('the input is not valid JSON: it contains a forbidden prototype property') }
  }
  return { ok: true, value }
}

function hasPrototypeKey(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return false
  for (const key of Object.keys(value)) {
    const child = (value as Record<string, unknown>)[key]
    if (key === '__proto__') return true
    if (key === 'constructor' && typeof child === 'object' && child !== null && Object.prototype.hasOwnProperty.call(child, 'prototype')) return true
    if (hasPrototypeKey(child)) return true
  }
  return false
}

/**
 * A tool's input hooks (the AI SDK's `onInputStart`, `onInputDelta`, `onInputAvailable`), called
 * as `streamText` calls them, with the call's id, the messages sent and the call's abort signal.
 * Not awaited: a hook of the app's never holds the stream up; its throw goes to `onHookError`.
 */
function inputHooks(tools: ToolSet | undefined, request: ModelStreamRequest) {
  type HookName = 'onInputStart' | 'onInputDelta' | 'onInputAvailable'
  return (toolName: string, name: HookName, options: { toolCallId: string; inputTextDelta?: string; input?: unknown }): void => {
    const definition = tools && Object.hasOwn(tools, toolName) ? (tools[toolName] as Partial<Record<HookName, (options: unknown) => unknown>>) : undefined
    const fn = definition?.[name]
    if (typeof fn !== 'function') return
    callHook(() => fn.call(definition, { ...options, messages: request.messages, abortSignal: request.abortSignal }), request.onHookError ?? (() => undefined))
  }
}

// ---------------------------------------------------------------------------------------------
// doStream directly (V3 and V4).

async function directStream(model: ProviderLanguageModel, request: ModelStreamRequest, onEvent: ModelEventHandler): Promise<void> {
  const { abortSignal, onChunk } = request
  const { stream, response, tools } = await openStream(model, request)
  const reader = stream.getReader()
  // A provider whose stream ignores the signal still stops: a pending read ends at once.
  const onAbort = () => void reader.cancel(abortSignal.reason).catch(() => {})
  abortSignal.addEventListener('abort', onAbort, { once: true })
  const parts = new StreamParts(tools, request, onEvent, response?.headers)
  let ended = false
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      onChunk?.()
      // (only a tool call's input is parsed asynchronously: a delta costs no promise here)
      const goesOn = parts.take(value as StreamPart)
      if (goesOn === false || (goesOn !== true && !(await goesOn))) return
    }
    ended = true
    parts.end(abortSignal.aborted)
  } finally {
    abortSignal.removeEventListener('abort', onAbort)
    if (ended) reader.releaseLock()
    else void reader.cancel().catch(() => {}) // an error part, an early stop by the consumer, or a read that threw
  }
}

/** The provider's `doStream` called with the request (its tools declared once per tool set, its prompt converted). */
async function openStream(model: ProviderLanguageModel, request: ModelStreamRequest) {
  const { abortSignal } = request
  const tools = request.tools && Object.keys(request.tools).length > 0 ? request.tools : undefined
  const call = tools ? await prepareTools(tools).call : { tools: undefined, toolChoice: undefined }
  const { toolChoice, ...settings } = request.settings ?? {}
  // The idle timeout covers the wait for the stream too: an adapter may ignore the signal.
  const { stream, response } = await untilAborted(
    model.doStream({
      ...settings,
      prompt: toProviderPrompt(request.system, request.messages, model.specificationVersion, request.promptCache),
      tools: call.tools,
      toolChoice: tools && toolChoice ? (typeof toolChoice === 'string' ? { type: toolChoice } : toolChoice) : call.toolChoice,
      abortSignal,
      ...(request.responseFormat !== undefined ? { responseFormat: request.responseFormat } : {}),
      includeRawChunks: false,
    } as Parameters<ProviderLanguageModel['doStream']>[0]),
    abortSignal ?? new AbortController().signal,
  )
  return { stream, response, tools }
}

/**
 * The provider's stream parts, one at a time, as `ModelStreamEvent`s: `take` says whether the
 * stream goes on (false: stop; a promise only for a tool call, whose input is parsed), `end`
 * sends the last event when the stream is done.
 */
class StreamParts {
  #first = true
  #warnings: ProviderWarning[] | undefined
  /** The tool of each call whose input streams, by call id: its onInputDelta hears the deltas. */
  readonly #streamingInputs = new Map<string, string>()
  readonly #hook: ReturnType<typeof inputHooks>
  /** Some output arrived (a stream without a finish chunk then still finishes). */
  #output = false
  #finish: ModelStreamEvent | undefined

  constructor(
    private readonly tools: ToolSet | undefined,
    request: ModelStreamRequest,
    private readonly onEvent: ModelEventHandler,
    private readonly headers: Record<string, string | undefined> | undefined,
  ) {
    this.#hook = inputHooks(tools, request)
  }

  take(part: StreamPart): boolean | Promise<boolean> {
    if (part.type === 'stream-start') {
      if (part.warnings?.length) this.#warnings = part.warnings
      return true
    }
    if (this.#first) {
      this.#first = false
      if (this.onEvent(this.#warnings ? { type: 'start', warnings: this.#warnings } : { type: 'start' }) === false) return false
    }
    switch (part.type) {
      case 'text-start':
      case 'reasoning-start':
      case 'text-end':
      case 'reasoning-end':
        return this.#send({ type: part.type, id: part.id, ...metadataOf(part) })
      // Deltas are most of a stream: the provider's part goes on as it is (its fields are the
      // event's), so a delta costs no object of turnchart's here.
      case 'text-delta':
      case 'reasoning-delta':
        this.#output = true
        return part.type === 'text-delta' && part.delta.length === 0 && !part.providerMetadata ? true : this.onEvent(part) !== false
      case 'tool-input-start':
        return this.#toolInputStart(part)
      case 'tool-input-delta':
        return this.#toolInputDelta(part)
      case 'tool-call':
        this.#output = true
        return part.providerExecuted ? true : this.#toolCall(part)
      case 'finish':
        this.#finish = { type: 'finish', finishReason: typeof part.finishReason === 'string' ? part.finishReason : part.finishReason.unified, usage: toLanguageModelUsage(part.usage) }
        return true
      case 'error':
        this.onEvent({ type: 'error', error: namingContentType(part.error, this.headers) })
        return false // the reader cancels the rest of the response
      case 'file':
        return this.#file(part)
      case 'source':
        return this.#send(sourceEvent(part))
      case 'tool-input-end':
      case 'tool-approval-request':
      case 'tool-result':
      case 'custom':
      case 'reasoning-file':
        this.#output = true
        return true
      default:
        return true // response-metadata, raw, ping
    }
  }

  /** The stream is done: aborted, finished (with unknown usage when no finish chunk came, as streamText), or empty (an error). */
  end(aborted: boolean): void {
    if (aborted) this.onEvent({ type: 'abort' })
    else if (this.#finish) this.onEvent(this.#finish)
    else if (this.#output) this.onEvent({ type: 'finish', finishReason: 'other', usage: toLanguageModelUsage(undefined) })
    else this.onEvent({ type: 'error', error: new EmptyModelStreamError() })
  }

  #send(event: ModelStreamEvent): boolean {
    this.#output = true
    return this.onEvent(event) !== false
  }

  #toolInputStart(part: Extract<StreamPart, { type: 'tool-input-start' }>): boolean {
    this.#output = true
    if (part.providerExecuted) return true // the provider runs it (web search...): not turnchart's call
    this.#streamingInputs.set(part.id, part.toolName)
    this.#hook(part.toolName, 'onInputStart', { toolCallId: part.id })
    return this.onEvent({ type: 'tool-input-start', id: part.id, toolName: part.toolName }) !== false
  }

  #toolInputDelta(part: Extract<StreamPart, { type: 'tool-input-delta' }>): boolean {
    this.#output = true
    const toolName = this.#streamingInputs.get(part.id)
    if (toolName !== undefined) this.#hook(toolName, 'onInputDelta', { toolCallId: part.id, inputTextDelta: part.delta })
    return true
  }

  #file(part: Extract<StreamPart, { type: 'file' }>): boolean {
    this.#output = true
    const file = fileData(part.data)
    return !file || this.onEvent({ type: 'file', mediaType: part.mediaType, ...file, ...metadataOf(part) }) !== false
  }

  async #toolCall(part: Extract<StreamPart, { type: 'tool-call' }>): Promise<boolean> {
    const { input, error } = await parseToolInput(this.tools, part.toolName, part.input)
    if (error === undefined) this.#hook(part.toolName, 'onInputAvailable', { toolCallId: part.toolCallId, input })
    const event: ModelStreamEvent =
      error === undefined
        ? { type: 'tool-call', callId: part.toolCallId, toolName: part.toolName, input, ...metadataOf(part) }
        : { type: 'tool-call', callId: part.toolCallId, toolName: part.toolName, input, error, ...metadataOf(part) }
    return this.onEvent(event) !== false
  }
}

/** A source the model cited, as its event. */
function sourceEvent(part: Extract<StreamPart, { type: 'source' }>): ModelStreamEvent {
  return {
    type: 'source',
    sourceType: part.sourceType,
    sourceId: part.id,
    ...(part.url !== undefined ? { url: part.url } : {}),
    ...(part.title !== undefined ? { title: part.title } : {}),
    ...(part.mediaType !== undefined ? { mediaType: part.mediaType } : {}),
    ...(part.filename !== undefined ? { filename: part.filename } : {}),
    ...metadataOf(part),
  }
}

/** A file part's data (V3: base64 string or bytes; V4: tagged data or URL) as base64 or a URL. */
function fileData(data: unknown): { data: string } | { url: string } | undefined {
  if (typeof data === 'string') return { data }
  if (data instanceof Uint8Array) return { data: Buffer.from(data).toString('base64') }
  if (data instanceof URL) return { url: data.href }
  if (typeof data === 'object' && data !== null) {
    const tagged = data as { type?: string; data?: unknown; url?: unknown }
    if (tagged.type === 'data') return fileData(tagged.data)
    if (tagged.type === 'url') return { url: String(tagged.url) }
  }
  return undefined
}

/** `{ providerMetadata }` when the part carries a non-empty one, else nothing. */
function metadataOf(part: { providerMetadata?: PartProviderMetadata }): { providerMetadata?: PartProviderMetadata } {
  const metadata = part.providerMetadata
  return metadata && typeof metadata === 'object' && Object.keys(metadata).length > 0 ? { providerMetadata: metadata } : {}
}

/**
 * A 200 answer that is not an event stream (a proxy's HTML page, plain JSON from a wrong
 * endpoint) fails with a parse error that does not say so: name what came back, keeping the
 * original message (which the retry classification reads) and the error as the cause.
 */
function namingContentType(error: unknown, headers: Record<string, string | undefined> | undefined): unknown {
  const contentType = headers?.['content-type'] ?? headers?.['Content-Type']
  if (!contentType || /text\/event-stream/i.test(contentType)) return error
  const message = error instanceof Error ? error.message : String(error)
  return new Error(`the model answered with content-type ${contentType}, not an event stream: ${message}`, { cause: error })
}
