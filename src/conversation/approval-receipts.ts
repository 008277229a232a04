/**
 * A session's approval receipts: every decision on a call that asked for approval (approved,
 * denied, expired), with who, when and the digest of the input decided on. Read from two
 * places that outlive different things: the turns' logs (a decision's logged event carries its
 * receipt: the log stays when a revert deletes the messages) and the tool parts (a fork copies
 * the parts, not the logs). A decision found in both is listed once.
 */
import type { ApprovalReceipt, ToolPart } from '../core/types'
import type { Store } from '../store/store'

/** One decision of a session, with the call it decided. */
export interface SessionApprovalReceipt extends ApprovalReceipt {
  /** The turn whose call it was (for a forked session: the original turn's id, as its copied message says). */
  turnId: string
  callId: string
  tool: string
}

/**
 * The session's receipts, oldest decision first.
 *
 * @example
 * const receipts = await approvalReceipts(store, sessionId) // [{ decision: 'approved', by: 'ada', at, inputDigest, callId, tool, turnId }]
 */
export async function approvalReceipts(store: Pick<Store, 'turns' | 'transitions' | 'messages'>, sessionId: string): Promise<SessionApprovalReceipt[]> {
  const found = new Map<string, SessionApprovalReceipt>()
  const add = (receipt: SessionApprovalReceipt) => {
    const key = `${receipt.turnId}\u0000${receipt.callId}`
    if (!found.has(key)) found.set(key, receipt)
  }
  for (const { id: turnId } of await store.turns.usages(sessionId)) {
    for (const row of await store.transitions.list(turnId)) {
      if (row.event !== 'tool.approved' && row.event !== 'tool.denied') continue
      const receipt = row.payload.receipt as (ApprovalReceipt & { tool?: string }) | undefined
      const callId = row.payload.callId
      if (!receipt || typeof callId !== 'string') continue // a decision logged before receipts existed
      const { tool, ...decided } = receipt
      add({ ...decided, turnId, callId, tool: String(tool ?? '') })
    }
  }
  for (const message of await store.messages.list(sessionId)) {
    const turnId = message.info.turnId
    if (!turnId) continue
    for (const part of message.parts) {
      if (part.type !== 'tool' || !(part as ToolPart).receipt) continue
      const { receipt, callId, tool } = part as ToolPart & { receipt: ApprovalReceipt }
      add({ ...receipt, turnId, callId, tool })
    }
  }
  return [...found.values()].sort((a, b) => a.at - b.at)
}
