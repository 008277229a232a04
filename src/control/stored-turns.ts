/**
 * What is read back of a stored turn, whichever engine runs it, or none: its tool parts, and
 * the open turns below it in its run tree (the one walk of a tree in the store).
 */
import type { ToolPart, TurnRecord } from '../core/types'
import type { Store } from '../store/store'

/** The tool parts of a stored turn (since its session's latest summary): what a turn another engine runs, or none, waits on. */
export async function storedToolParts(store: Pick<Store, 'messages'>, sessionId: string, turnId: string): Promise<ToolPart[]> {
  return (await store.messages.list(sessionId, { fromLatestSummary: true }))
    .filter((m) => m.info.turnId === turnId)
    .flatMap((m) => m.parts)
    .filter((p): p is ToolPart => p.type === 'tool')
}

/**
 * The open turns below `turnId` in its run tree, nearest first (an ended turn's children ended
 * with it, so the walk stops there).
 *
 * @example
 * await openTurnsBelow(store, parent.id) // [child, grandchild]
 */
export async function openTurnsBelow(store: Pick<Store, 'turns'>, turnId: string): Promise<TurnRecord[]> {
  const open: TurnRecord[] = []
  for (let level = [turnId]; level.length > 0; ) {
    const children = (await Promise.all(level.map((id) => store.turns.children(id)))).flat().filter((turn) => !turn.outcome)
    open.push(...children)
    level = children.map((turn) => turn.id)
  }
  return open
}
