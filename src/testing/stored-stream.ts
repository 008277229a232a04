/**
 * A recorded call's stored parts back into the provider stream parts (LanguageModelV3 / V4)
 * that produced them: text and reasoning as one delta each (with their provider metadata),
 * tool calls with their JSON input, files and sources, then the finish with the stored usage.
 * Fed to a new engine, they store the same parts.
 *
 * What the store does not keep is the order of a part's end among the stream's other parts.
 * It is rebuilt as the chat-completions providers send it: a text or reasoning part ends when
 * the next one starts, reasoning also ends before a tool call starts, and a text still open
 * then stays open until the stream's end, where the tool calls complete (so the UI stream's
 * `text-end` falls between a tool's input start and its input, as there).
 */
import type { Part, PartProviderMetadata, TextPart, Tokens, ToolPart } from '../core/types'

/** A provider stream part (the V3 and V4 shapes turnchart reads). */
export type StreamPart = { type: string } & Record<string, unknown>

export type SpecificationVersion = 'v3' | 'v4'

/**
 * The stream parts of one step attempt. `finish`: whether the attempt finished (its
 * `step-finish` is sent as the stream's `finish`); without it the parts stop where the
 * attempt was cut off, with its open text left open.
 *
 * @example
 * stepStreamParts(call.parts, 'v3')
 * // [{ type: 'stream-start', warnings: [] }, { type: 'reasoning-start', id: 'r1' }, …, { type: 'finish', … }]
 */
export function stepStreamParts(parts: Part[], version: SpecificationVersion): StreamPart[] {
  const out: StreamPart[] = [{ type: 'stream-start', warnings: [] }]
  const open: TextPart[] = []
  const calls: ToolPart[] = []
  const ids = new Map<Part, string>()
  const idOf = (part: Part) => {
    let id = ids.get(part)
    if (!id) ids.set(part, (id = `${part.type === 'reasoning' ? 'reasoning' : 'txt'}-${ids.size}`))
    return id
  }
  const close = (which: (part: TextPart) => boolean) => {
    for (const part of open.filter(which)) {
      open.splice(open.indexOf(part), 1)
      out.push({ type: `${part.type}-end`, id: idOf(part) })
    }
  }
  for (const part of parts) {
    switch (part.type) {
      case 'text':
      case 'reasoning': {
        close(() => true)
        const id = idOf(part)
        out.push({ type: `${part.type}-start`, id, ...metadata(part.providerMetadata) })
        if (part.text.length > 0) out.push({ type: `${part.type}-delta`, id, delta: part.text })
        open.push(part)
        break
      }
      case 'tool':
        close((p) => p.type === 'reasoning')
        out.push({ type: 'tool-input-start', id: part.callId, toolName: part.tool })
        calls.push(part)
        break
      case 'file':
      case 'source':
        close(() => true)
        out.push(...attachmentParts(part, version))
        break
      case 'step-finish':
        close(() => true)
        for (const call of calls.splice(0)) out.push(...toolCallEnd(call))
        out.push({ type: 'finish', finishReason: { unified: part.reason, raw: undefined }, usage: providerUsage(part.tokens) })
        break
    }
  }
  // An attempt cut off or failed: its calls had arrived (a failure discards them, as it did), its text stays open.
  for (const call of calls) out.push(...toolCallEnd(call))
  return out
}

/** A file or a source as its stream part (a file with neither data nor a URL has none). */
function attachmentParts(part: Extract<Part, { type: 'file' | 'source' }>, version: SpecificationVersion): StreamPart[] {
  if (part.type === 'source') {
    const { id: _id, sessionId: _s, messageId: _m, step: _st, attempt: _a, type: _t, sourceId, ...fields } = part
    return [{ type: 'source', id: sourceId, ...fields }]
  }
  if (part.data === undefined && part.url === undefined) return []
  return [{ type: 'file', mediaType: part.mediaType ?? 'application/octet-stream', data: fileData(part, version), ...metadata(part.providerMetadata) }]
}

/**
 * The stream parts of a summary request that answered `text` with `tokens` of usage.
 *
 * @example
 * summaryStreamParts('Summary: …', tokens) // stream-start, text-start, text-delta, text-end, finish
 */
export function summaryStreamParts(text: string, tokens: Tokens | undefined): StreamPart[] {
  return [
    { type: 'stream-start', warnings: [] },
    { type: 'text-start', id: 'txt-0' },
    ...(text.length > 0 ? [{ type: 'text-delta', id: 'txt-0', delta: text }] : []),
    { type: 'text-end', id: 'txt-0' },
    { type: 'finish', finishReason: { unified: 'stop', raw: undefined }, usage: providerUsage(tokens) },
  ]
}

/** A provider's usage that `toTokens` reads back as `tokens` (no usage at all when the step reported none). */
export function providerUsage(tokens: Tokens | undefined): StreamPart['usage'] {
  if (!tokens) return { inputTokens: {}, outputTokens: {} }
  const { input, output, reasoning, cache } = tokens
  return {
    inputTokens: { total: input, noCache: Math.max(0, input - cache.read - cache.write), cacheRead: cache.read, cacheWrite: cache.write },
    outputTokens: { total: output, text: Math.max(0, output - reasoning), reasoning },
  }
}

/** The rest of a tool call after its `tool-input-start`: its input and the complete call. */
function toolCallEnd(part: ToolPart): StreamPart[] {
  const input = toolInputText(part)
  return [
    { type: 'tool-input-delta', id: part.callId, delta: input },
    { type: 'tool-input-end', id: part.callId },
    { type: 'tool-call', toolCallId: part.callId, toolName: part.tool, input, ...metadata(part.providerMetadata) },
  ]
}

/**
 * The input as the model sent it. An input that was not JSON is stored as its text (with the
 * error saying so), and goes back as that text, so the new engine finds the same error.
 */
function toolInputText(part: ToolPart): string {
  const { state } = part
  if (state.status === 'error' && typeof state.input === 'string' && /^invalid input for tool .*not valid JSON/.test(state.error)) return state.input
  return JSON.stringify(state.input ?? {})
}

function fileData(part: Extract<Part, { type: 'file' }>, version: SpecificationVersion): unknown {
  // V4 tags a file's data; V3 carries base64 only, so a file the model gave as a URL goes in
  // V4's tagged form, which turnchart reads in either version.
  if (part.url !== undefined) return { type: 'url', url: new URL(part.url) }
  return version === 'v4' ? { type: 'data', data: part.data } : part.data
}

function metadata(value: PartProviderMetadata | undefined): { providerMetadata?: PartProviderMetadata } {
  return value && Object.keys(value).length > 0 ? { providerMetadata: value } : {}
}
