/**
 * Stored messages and parts as the AI SDK's `UIMessage` shape, which `useChat` renders: a page
 * loads a conversation from the database with these, then streams new turns on top.
 */
import type { UIMessage } from 'ai'
import type { SerializedError } from '../core/errors'
import type { MessageInfo, MessageWithParts, Part, Tokens, ToolPart } from '../core/types'
import { callWait } from '../core/call-wait'

/** The chart's state as the page sees it (the `data-turn-state` part). */
export interface TurnStateData {
  turnId: string
  /** The chart state: `streaming`, `tool-running`, `retry-waiting`, `awaiting-approval`, `completed`… */
  state: string
  /** Attempt number of the current step (1-based). */
  attempt: number
  /** When the next attempt starts (ms since epoch), while in `retry-waiting`; else null. */
  retryAt: number | null
  /** Why the step is retried, while in `retry-waiting`. */
  message?: string
  /** While the turn's write waits on the database (an outage): which write, since when. */
  storage?: { operation: string; since: number }
  /** Fallback models (`model: ['primary', 'backup']`): the name of the model the current attempt asks. */
  model?: string
}

/** Message metadata: the turn, its usage and how it ended. */
export interface TurnchartMessageMetadata {
  turnId?: string
  tokens?: Tokens
  cost?: number
  finish?: string
  error?: SerializedError
  /** True on a compaction summary. */
  summary?: boolean
}

/** The data parts of turnchart's UI messages. */
export interface TurnchartDataParts {
  [name: string]: unknown
  /** The chart's state (one part, id `turn-state`, updated in place). */
  'turn-state': TurnStateData
  /** A compaction marker (the summary's text stays server-side). */
  compaction: { auto: boolean }
  /** A message the user steered into the running turn (`engine.steer`); the model's next call sees it. Its id: the stored message's. */
  steered: { text: string }
  /** A tool call denied (`engine.deny`, from any client), with the reason the model sees. Its id: `denial-<toolCallId>`. */
  denial: { toolCallId: string; reason?: string }
  /** Structured output (`output: Output.object({ schema })`): the final answer's parsed object, sent when the turn completes with it. Its id: `output`. */
  output: unknown
}

/** The `UIMessage` that turnchart's streams and `toUIMessages` produce. */
export type TurnchartUIMessage = UIMessage<TurnchartMessageMetadata, TurnchartDataParts>

type UIPart = TurnchartUIMessage['parts'][number]

/** The message metadata of a stored message (only the fields that are set). */
export function messageMetadata(info: MessageInfo): TurnchartMessageMetadata {
  const metadata: TurnchartMessageMetadata = {}
  if (info.turnId) metadata.turnId = info.turnId
  if (info.tokens) metadata.tokens = info.tokens
  if (info.cost !== undefined) metadata.cost = info.cost
  if (info.finish) metadata.finish = info.finish
  if (info.error) metadata.error = info.error
  if (info.summary) metadata.summary = true
  return metadata
}

/** True when a tool part's error is a denial by the user (`engine.deny`). */
export function isDenied(part: ToolPart): boolean {
  return part.state.status === 'error' && part.state.metadata?.denied === true
}

/** The reason a denied call was given (`engine.deny(turnId, callId, reason)`), if any. */
export function denialReason(part: ToolPart): string | undefined {
  if (part.state.status !== 'error') return undefined
  const stored = part.state.metadata?.reason
  if (typeof stored === 'string') return stored
  // Rows written before the reason was kept apart: it is the tail of the error the model saw.
  return part.state.error.replace(/^the user denied this tool call:?\s*/, '') || undefined
}

/** One stored tool part as a static tool UI part (`tool-<name>`), in the AI SDK's states. */
function toolUIPart(part: ToolPart): UIPart {
  const base = { type: `tool-${part.tool}` as const, toolCallId: part.callId }
  const state = part.state
  switch (state.status) {
    case 'pending':
      if (callWait(state)?.kind === 'approval') return { ...base, state: 'approval-requested', input: state.input, approval: { id: part.callId } } as UIPart
      return { ...base, state: 'input-available', input: state.input } as UIPart
    case 'running':
    // (in doubt or deferred: the call waits; the turn's state, `data-turn-state`, says for what)
    case 'in-doubt':
    case 'deferred':
      return { ...base, state: 'input-available', input: state.input } as UIPart
    case 'completed':
      return { ...base, state: 'output-available', input: state.input, output: state.output } as UIPart
    case 'error':
      if (isDenied(part)) {
        const reason = denialReason(part)
        return { ...base, state: 'output-denied', input: state.input, approval: { id: part.callId, approved: false, ...(reason ? { reason } : {}) } } as UIPart
      }
      return { ...base, state: 'output-error', input: state.input, errorText: state.error } as UIPart
  }
}

function toUIPart(part: Part): UIPart | undefined {
  switch (part.type) {
    case 'text':
      return { type: 'text', text: part.text, state: 'done' }
    case 'reasoning':
      return { type: 'reasoning', text: part.text, state: 'done' }
    case 'step-start':
      return { type: 'step-start' }
    case 'tool':
      return toolUIPart(part)
    case 'compaction':
      return { type: 'data-compaction', id: part.id, data: { auto: part.auto } }
    case 'file': {
      // A prompt's attachment (or a file the model made): useChat shows a file part by its URL.
      const mediaType = part.mediaType ?? 'application/octet-stream'
      const url = part.url ?? (part.data !== undefined ? `data:${mediaType};base64,${part.data}` : undefined)
      return url === undefined ? undefined : { type: 'file', mediaType, url, ...(part.filename ? { filename: part.filename } : {}) }
    }
    case 'step-finish':
    case 'source':
      return undefined // its usage is in the message metadata; sources are not shown
  }
}

/**
 * Converts stored messages (`engine.messages(sessionId)`) to `UIMessage[]` for `useChat`'s
 * `messages`: text, reasoning, files (a prompt's attachments, as `data:` or http(s) URLs), step
 * boundaries, tools (with approval requests and denials) and compaction markers as parts;
 * usage, finish reason and error as metadata.
 *
 * @example
 * const messages = toUIMessages(await engine.messages(sessionId))
 * // in the page: useChat({ id: sessionId, messages })
 */
export function toUIMessages(messages: MessageWithParts[]): TurnchartUIMessage[] {
  return messages.map(({ info, parts }) => ({
    id: info.id,
    role: info.role,
    metadata: messageMetadata(info),
    parts: parts.map(toUIPart).filter((p): p is UIPart => p !== undefined),
  }))
}
