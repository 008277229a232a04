/**
 * `POST <api>` with an assistant message last whose tools carry approval responses:
 * `engine.approve` / `deny` each (`by` the identity `authorize` returned; an approval with
 * `approvalInputs[toolCallId]` runs the tool with that input), then the rest of the turn,
 * streamed. Only the chat's own turns (403 `TurnNotInChatError`); 409 `ApprovalNotPendingError`
 * when none was pending; 400 for an edit the engine refuses.
 */
import { isToolUIPart, type UIMessage } from 'ai'
import { ApprovalNotPendingError, InvalidArgumentError, TurnNotInChatError } from '../core/errors'
import type { ChatContext } from './chat-context'
import type { ChatRequestBody } from './chat-request'
import { approvalOwners, isChatTurn } from './chat-turns'

type ToolUIPart = Parameters<typeof isToolUIPart>[0] & { toolCallId: string }

export async function answerChatApprovals(chat: ChatContext, request: Request, body: ChatRequestBody, last: UIMessage, by: string | undefined): Promise<Response> {
  const { engine } = chat
  const responses = last.parts.filter(isToolUIPart).filter((p) => p.state === 'approval-responded')
  if (responses.length === 0) return chat.invalid('the last message is neither a user message nor approval responses')
  const turnId = (last.metadata as { turnId?: unknown } | undefined)?.turnId
  const id = typeof turnId === 'string' && turnId !== '' ? turnId : engine.activeTurn(body.id)?.id
  if (!id) return chat.error(409, new ApprovalNotPendingError('', responses[0].toolCallId, 'no turn runs in this chat'))
  // Only the chat's own turns: a turn id from the body may name another chat's.
  if (!(await isChatTurn(engine, body.id, id))) return chat.error(403, new TurnNotInChatError(body.id, id))
  const cancel = new AbortController()
  // The stream subscribes before the decisions, so nothing the turn does after them is missed.
  const response = chat.stream(request, { id, sessionId: body.id }, { replay: false, messages: body.messages }, cancel.signal)
  const { accepted, refusal } = await decide(chat, body, id, responses, by)
  if (accepted > 0) return response
  cancel.abort()
  await response.body?.cancel().catch(() => undefined)
  return chat.error(ApprovalNotPendingError.isInstance(refusal) ? 409 : 400, refusal)
}

/** Each response decided on the turn that waits on its call (run trees: a child turn of the chat's); how many the engine took, and the last refusal. */
async function decide(chat: ChatContext, body: ChatRequestBody, turnId: string, responses: ToolUIPart[], by: string | undefined): Promise<{ accepted: number; refusal: unknown }> {
  const { engine } = chat
  const owners = await approvalOwners(engine, body.id)
  const who = by !== undefined ? { by } : {}
  let accepted = 0
  let refusal: unknown
  for (const part of responses) {
    const approval = (part as { approval?: { approved?: boolean; reason?: string } }).approval
    const target = owners.get(part.toolCallId) ?? turnId
    try {
      const edited = body.approvalInputs && Object.hasOwn(body.approvalInputs, part.toolCallId) ? { input: body.approvalInputs[part.toolCallId] } : undefined
      if (approval?.approved === true) await engine.approve(target, part.toolCallId, { ...edited, ...who })
      else await engine.deny(target, part.toolCallId, { ...(typeof approval?.reason === 'string' ? { reason: approval.reason } : {}), ...who })
      accepted++
    } catch (error) {
      if (!ApprovalNotPendingError.isInstance(error) && !InvalidArgumentError.isInstance(error)) throw error
      refusal = error
    }
  }
  return { accepted, refusal }
}
