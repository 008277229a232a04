/**
 * The session as the viewer's page shows it: the conversation (a file's bytes left out, their
 * size kept) and each turn with its path through the drawn chart.
 */
import type { TurnInput } from '../../machines/turn.types'
import type { Store } from '../store/store'
import type { PagePart, SessionPage, TurnView } from './wire'
import { turnPath } from './turn-path'
import { viewSession } from './read-views'
import type { Part } from '../core/types'

/** A part without a file's bytes: a page pushed on every change stays small. */
function pagePart(part: Part): PagePart {
  if (part.type !== 'file' || part.data === undefined) return part
  const { data, ...rest } = part
  const padding = data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0
  return { ...rest, bytes: Math.floor((data.length * 3) / 4) - padding }
}

/** Undefined for an unknown session. */
export async function sessionPage(store: Store, sessionId: string): Promise<SessionPage | undefined> {
  const view = await viewSession(store, sessionId)
  if (!view) return undefined
  const turns: TurnView[] = []
  for (const { transitions, ...turn } of view.turns) {
    const input = (await store.turns.input(turn.id)) as TurnInput | undefined
    const { steps, mismatch } = turnPath(input, transitions)
    turns.push({ ...turn, path: steps, ...(mismatch === undefined ? {} : { mismatch }) })
  }
  return { session: view.session, messages: view.messages.map(({ info, parts }) => ({ info, parts: parts.map(pagePart) })), turns }
}
