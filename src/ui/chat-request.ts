/**
 * What a chat request says, read defensively: the body `useChat` POSTs, the route of a GET,
 * DELETE or `/calls` POST, and the chat ids the handler accepts.
 */
import type { UIMessage } from 'ai'

export interface ChatRequestBody {
  id: string
  messages: UIMessage[]
  /** Edited inputs of approved calls, by tool call id (only tools the engine's `editableApprovals` names). */
  approvalInputs?: Record<string, unknown>
}

/** A chat id as `createSession` takes it; anything else is refused before any hook sees it. */
export const chatIdPattern = /^[\w.:-]{1,200}$/

/** What a refused chat id is told. */
export const chatIdRule = 'the chat id must be 1-200 letters, digits, _ . : -'

/** The body `useChat` sends (`{ id, messages }`, the last message a user's or an assistant's), or undefined. */
export function parseChatBody(text: string): ChatRequestBody | undefined {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return undefined
  }
  if (typeof value !== 'object' || value === null) return undefined
  const { id, messages, approvalInputs } = value as Record<string, unknown>
  if (typeof id !== 'string' || !Array.isArray(messages) || messages.length === 0) return undefined
  const last = messages[messages.length - 1] as Partial<UIMessage> | null
  if (typeof last !== 'object' || last === null || !Array.isArray(last.parts) || (last.role !== 'user' && last.role !== 'assistant')) return undefined
  if (approvalInputs !== undefined && (typeof approvalInputs !== 'object' || approvalInputs === null || Array.isArray(approvalInputs))) return undefined
  return { id, messages: messages as UIMessage[], ...(approvalInputs ? { approvalInputs: approvalInputs as Record<string, unknown> } : {}) }
}

/** `<api>/<chatId>/<action>` of a GET, a DELETE or a `/calls` POST; the chat id is the last-but-one segment. */
export function chatRoute(url: URL): { chatId: string; action: string } | undefined {
  const segments = url.pathname.split('/').filter(Boolean)
  if (segments.length < 2) return undefined
  try {
    return { chatId: decodeURIComponent(segments[segments.length - 2]), action: segments[segments.length - 1] }
  } catch {
    return undefined // a malformed %-escape
  }
}
