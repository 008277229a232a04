/**
 * One LLM call as turnchart's own stream events.
 *
 * For a `LanguageModelV3` object the model's `doStream` is called directly: the prompt is
 * converted without the AI SDK's zod pass over the whole history, the tools' JSON schemas are
 * computed once per tool set, and the provider's stream is read in one loop (no `streamText`
 * transform pipeline). Any other model (a model id string, a V2 model) goes through
 * `streamText(...).fullStream`, mapped to the same events, so stream-step and compaction keep one
 * loop whatever the model is.
 */
import { untilAborted } from './idle-timer'
import { asSchema, NoOutputGeneratedError, parsePartialJson, streamText, tool as declareTool, type LanguageModel, type LanguageModelUsage, type ModelMessage, type ToolSet } from 'ai'
import { asLanguageModelUsage, convertToLanguageModelPrompt, prepareToolsAndToolChoice } from 'ai/internal'

/** A normalized event of one model call. */
export type ModelStreamEvent =
  /** The first chunk of the response arrived (streamText's `start-step`). */
  | { type: 'start' }
  | { type: 'text-start' | 'reasoning-start'; id: string }
  | { type: 'text-delta' | 'reasoning-delta'; id: string; text: string }
  | { type: 'text-end' | 'reasoning-end'; id: string }
  | { type: 'tool-input-start'; id: string; toolName: string }
  /** A complete tool call; `error` (the message stored on the tool part) when its input is unusable. */
  | { type: 'tool-call'; callId: string; toolName: string; input: unknown; error?: string }
  | { type: 'finish'; finishReason: string; usage: LanguageModelUsage }
  | { type: 'error'; error: unknown }
  /** The call was aborted through `abortSignal`. */
  | { type: 'abort' }

export interface ModelStreamRequest {
  model: LanguageModel
  system?: string
  messages: ModelMessage[]
  /** The user's tools (declared to the model without `execute`); omit for none. */
  tools?: ToolSet
  abortSignal: AbortSignal
  /** Called on every chunk the provider sends, also those that map to no event (idle timer). */
  onChunk?: () => void
}

type ModelObject = Exclude<LanguageModel, string>
type ModelV3 = Extract<ModelObject, { specificationVersion: 'v3' }>
type V3Result = Awaited<ReturnType<ModelV3['doStream']>>
type V3Part = V3Result['stream'] extends ReadableStream<infer P> ? P : never
type V3CallOptions = Parameters<ModelV3['doStream']>[0]

/** Whether `model` is called through `doStream` directly (a V3 model object). */
export function isDirectModel(model: LanguageModel): model is ModelV3 {
  return typeof model === 'object' && model !== null && (model as { specificationVersion?: unknown }).specificationVersion === 'v3' && typeof (model as { doStream?: unknown }).doStream === 'function'
}

/**
 * Streams one model call as `ModelStreamEvent`s. HTTP errors of the request may be thrown (V3
 * path) or yielded as `error` events (streamText path); a broken stream throws.
 *
 * @example
 * for await (const event of modelStream({ model, messages, tools, abortSignal })) { ... }
 */
export function modelStream(request: ModelStreamRequest): AsyncGenerator<ModelStreamEvent> {
  return isDirectModel(request.model) ? directStream(request.model, request) : sdkStream(request)
}

// ---------------------------------------------------------------------------------------------
// Tools: declared once per tool set.

interface PreparedTools {
  /** The user's tools without `execute` (for streamText). */
  declared: ToolSet
  /** `tools` and `toolChoice` as `doStream` takes them (JSON schemas computed once). */
  call: Promise<Pick<V3CallOptions, 'tools' | 'toolChoice'>>
  /** Input schemas, by tool name, for validating tool-call input. */
  schemas: Map<string, ReturnType<typeof asSchema>>
}

/** The user's tools as declared to the model: same names, descriptions and schemas, no execute. */
export function declaredTools(tools: ToolSet): ToolSet {
  const out: ToolSet = {}
  for (const [name, t] of Object.entries(tools)) {
    out[name] = declareTool({ description: t.description, inputSchema: t.inputSchema } as never)
  }
  return out
}

const preparedCache = new WeakMap<ToolSet, PreparedTools>()
const noTools: ToolSet = {}

function prepared(tools: ToolSet | undefined): PreparedTools {
  const key = tools ?? noTools
  let value = preparedCache.get(key)
  if (!value) {
    const declared = declaredTools(key)
    const call = prepareToolsAndToolChoice({ tools: declared, toolChoice: undefined, activeTools: undefined })
    call.catch(() => {}) // a schema that cannot be converted fails the call that awaits it, not the process
    const schemas = new Map<string, ReturnType<typeof asSchema>>()
    for (const [name, t] of Object.entries(key)) schemas.set(name, asSchema(t.inputSchema))
    value = { declared, call, schemas }
    preparedCache.set(key, value)
  }
  return value
}

/** The message stored on a tool part whose call cannot run. */
export function toolInputError(tools: ToolSet | undefined, toolName: string, error: unknown): string {
  const names = Object.keys(tools ?? {})
  if (!tools || !(toolName in tools)) {
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
  const schema = tools && toolName in tools ? prepared(tools).schemas.get(toolName) : undefined
  const parsed = text.trim() === '' ? { ok: true as const, value: {} } : await parseJson(text)
  if (!schema) return { input: parsed.ok ? parsed.value : text, error: toolInputError(tools, toolName, undefined) }
  if (!parsed.ok) return { input: text, error: toolInputError(tools, toolName, parsed.error) }
  if (!schema.validate) return { input: parsed.value }
  let error: unknown
  try {
    const result = await schema.validate(parsed.value)
    if (result.success) return { input: result.value }
    error = result.error
  } catch (thrown) {
    error = thrown
  }
  return { input: parsed.value, error: toolInputError(tools, toolName, error) }
}

/** JSON through the AI SDK's prototype-safe parser; the error says why the text is not JSON. */
async function parseJson(text: string): Promise<{ ok: true; value: unknown } | { ok: false; error: Error }> {
  const { value, state } = await parsePartialJson(text)
  if (state === 'successful-parse') return { ok: true, value }
  let reason = 'not valid JSON'
  try {
    JSON.parse(text)
  } catch (error) {
    reason = error instanceof Error ? error.message : String(error)
  }
  return { ok: false, error: new Error(`the input is not valid JSON: ${reason}`) }
}

// ---------------------------------------------------------------------------------------------
// V3: doStream directly.

async function* directStream(model: ModelV3, request: ModelStreamRequest): AsyncGenerator<ModelStreamEvent> {
  const { abortSignal, onChunk } = request
  const tools = request.tools && Object.keys(request.tools).length > 0 ? request.tools : undefined
  const [prompt, call] = await Promise.all([
    (async () =>
      convertToLanguageModelPrompt({
        prompt: { system: request.system, messages: request.messages },
        supportedUrls: await model.supportedUrls,
        download: undefined,
        abortSignal,
      }))(),
    tools ? prepared(tools).call : Promise.resolve({ tools: undefined, toolChoice: undefined }),
  ])
  // The idle timeout covers the wait for the stream too: an adapter may ignore the signal.
  const { stream, response } = await untilAborted(
    model.doStream({ prompt, tools: call.tools, toolChoice: call.toolChoice, abortSignal, includeRawChunks: false }),
    abortSignal ?? new AbortController().signal,
  )

  const reader = stream.getReader()
  // A provider whose stream ignores the signal still stops: a pending read ends at once.
  const onAbort = () => void reader.cancel(abortSignal.reason).catch(() => {})
  abortSignal.addEventListener('abort', onAbort, { once: true })
  let first = true
  let output = false
  let finish: ModelStreamEvent | undefined
  let ended = false
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      onChunk?.()
      const part = value as V3Part
      if (part.type === 'stream-start') continue
      if (first) {
        first = false
        yield { type: 'start' }
      }
      switch (part.type) {
        case 'text-start':
        case 'reasoning-start':
        case 'text-end':
        case 'reasoning-end':
          output = true
          yield { type: part.type, id: part.id }
          break
        case 'text-delta':
          output = true
          if (part.delta.length > 0) yield { type: 'text-delta', id: part.id, text: part.delta }
          break
        case 'reasoning-delta':
          output = true
          yield { type: 'reasoning-delta', id: part.id, text: part.delta }
          break
        case 'tool-input-start':
          output = true
          yield { type: 'tool-input-start', id: part.id, toolName: part.toolName }
          break
        case 'tool-call': {
          output = true
          const { input, error } = await parseToolInput(tools, part.toolName, part.input)
          yield error === undefined
            ? { type: 'tool-call', callId: part.toolCallId, toolName: part.toolName, input }
            : { type: 'tool-call', callId: part.toolCallId, toolName: part.toolName, input, error }
          break
        }
        case 'finish':
          finish = { type: 'finish', finishReason: part.finishReason.unified, usage: asLanguageModelUsage(part.usage) }
          break
        case 'error':
          yield { type: 'error', error: namingContentType(part.error, response?.headers) }
          return // the finally cancels the rest of the response
        case 'tool-input-delta':
        case 'tool-input-end':
        case 'file':
        case 'source':
        case 'tool-approval-request':
          output = true
          break
        default:
          break // response-metadata, raw, provider-executed tool results
      }
    }
    ended = true
    if (abortSignal.aborted) {
      yield { type: 'abort' }
    } else if (finish) {
      yield finish
    } else if (output) {
      // As streamText: output without a finish chunk still finishes the step, with unknown usage.
      yield { type: 'finish', finishReason: 'other', usage: asLanguageModelUsage(emptyUsage) }
    } else {
      yield { type: 'error', error: new NoOutputGeneratedError({ message: 'No output generated. The model stream ended without a finish chunk.' }) }
    }
  } finally {
    abortSignal.removeEventListener('abort', onAbort)
    if (ended) reader.releaseLock()
    else void reader.cancel().catch(() => {}) // an error part, an early stop by the consumer, or a read that threw
  }
}

const emptyUsage = {
  inputTokens: { total: undefined, noCache: undefined, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: undefined, text: undefined, reasoning: undefined },
}

// ---------------------------------------------------------------------------------------------
// Fallback: streamText (model id strings, V2 models).

async function* sdkStream(request: ModelStreamRequest): AsyncGenerator<ModelStreamEvent> {
  const { tools, abortSignal, onChunk } = request
  const result = streamText({
    model: request.model,
    system: request.system,
    messages: request.messages,
    ...(tools ? { tools: prepared(tools).declared } : {}),
    maxRetries: 0,
    abortSignal,
    onError: () => {}, // errors arrive as `error` parts; the default handler would print them
  })
  for await (const part of result.fullStream) {
    onChunk?.()
    switch (part.type) {
      case 'start-step':
        yield { type: 'start' }
        break
      case 'text-start':
      case 'reasoning-start':
      case 'text-end':
      case 'reasoning-end':
        yield { type: part.type, id: part.id }
        break
      case 'text-delta':
      case 'reasoning-delta':
        yield { type: part.type, id: part.id, text: part.text }
        break
      case 'tool-input-start':
        yield { type: 'tool-input-start', id: part.id, toolName: part.toolName }
        break
      case 'tool-call':
        if ((part as { invalid?: boolean }).invalid) {
          const error = toolInputError(tools, part.toolName, causeOf((part as { error?: unknown }).error))
          yield { type: 'tool-call', callId: part.toolCallId, toolName: part.toolName, input: part.input, error }
        } else {
          yield { type: 'tool-call', callId: part.toolCallId, toolName: part.toolName, input: part.input }
        }
        break
      case 'tool-error':
        yield { type: 'tool-call', callId: part.toolCallId, toolName: part.toolName, input: part.input, error: toolInputError(tools, part.toolName, part.error) }
        break
      case 'finish-step':
        yield { type: 'finish', finishReason: part.finishReason, usage: part.usage }
        break
      case 'error':
        yield { type: 'error', error: part.error }
        return
      case 'abort':
        yield { type: 'abort' }
        return
    }
  }
}

/** streamText wraps a bad input in InvalidToolInputError; its cause is what the V3 path reports. */
function causeOf(error: unknown): unknown {
  const cause = (error as { cause?: unknown } | undefined)?.cause
  return cause instanceof Error ? cause : error
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
