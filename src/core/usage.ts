/** Usage arithmetic: a turn's tokens and cost from its messages, a session's from its turns. */
import { emptyTokens, type MessageInfo, type TurnUsage, type Usage } from './types'

export function emptyUsage(): Usage {
  return { tokens: emptyTokens(), cost: 0 }
}

export function emptyTurnUsage(turnId: string): TurnUsage {
  return { turnId, ...emptyUsage(), compaction: emptyUsage() }
}

function add(into: Usage, from: Pick<MessageInfo, 'tokens' | 'cost'>): void {
  const t = from.tokens
  if (t) {
    into.tokens.input += t.input
    into.tokens.output += t.output
    into.tokens.reasoning += t.reasoning
    into.tokens.cache.read += t.cache.read
    into.tokens.cache.write += t.cache.write
  }
  into.cost += from.cost ?? 0
}

/** Adds a message's usage to a turn's: to the total, and to `compaction` when it is a summary. */
export function addUsage(usage: TurnUsage, info: Pick<MessageInfo, 'tokens' | 'cost'>, summary: boolean): void {
  add(usage, info)
  if (summary) add(usage.compaction, info)
}

/** Sums usages (a session's total). */
export function sumUsage(usages: Usage[]): Usage {
  const total = emptyUsage()
  for (const u of usages) add(total, u)
  return total
}

/** A turn's usage from its assistant messages' info (summaries counted apart too). */
export function usageOfMessages(turnId: string, infos: Iterable<Pick<MessageInfo, 'tokens' | 'cost' | 'summary' | 'role'>>): TurnUsage {
  const usage = emptyTurnUsage(turnId)
  for (const info of infos) if (info.role === 'assistant') addUsage(usage, info, info.summary === true)
  return usage
}

/**
 * A turn's usage with its descendants' apart and together (`descendants`, `tree`); as it is
 * when it started no child.
 *
 * @example
 * withDescendants(turnUsage, [childUsage]) // { ...turnUsage, descendants, tree }
 */
export function withDescendants(usage: TurnUsage, descendants: Usage[] | undefined): TurnUsage {
  if (!descendants || descendants.length === 0) return usage
  const sum = sumUsage(descendants)
  return { ...usage, descendants: sum, tree: sumUsage([usage, sum]) }
}
