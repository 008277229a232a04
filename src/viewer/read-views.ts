/**
 * What the read-only CLI and the viewer show, computed from a repository (inside one read-only
 * transaction): session summaries, a session's conversation with its turns, a turn's replay.
 */
import type { TurnInput } from '../../machines/turn.types'
import type { Store } from '../store/store'
import { replayTransitions, type ReplayStep } from '../turn/replay'
import type { MessageWithParts, SessionInfo, TransitionRecord, TurnRecord } from '../core/types'
import type { SessionSummary } from './wire'

export type { SessionSummary }

/** Each session with its message count and its turns (state and outcome), oldest first. */
export async function summarizeSessions(store: Store): Promise<SessionSummary[]> {
  const out: SessionSummary[] = []
  for (const session of await store.sessions.list()) {
    const messages = await store.messages.list(session.id)
    const turnIds = [...new Set(messages.map((m) => m.info.turnId).filter((id): id is string => Boolean(id)))]
    const turns = []
    for (const id of turnIds) {
      const turn = await store.turns.get(id)
      turns.push({ id, state: turn?.state ?? 'unknown', outcome: turn?.outcome ?? null })
    }
    out.push({ ...session, messages: messages.length, turns })
  }
  return out
}

export interface SessionView {
  session: SessionInfo
  messages: MessageWithParts[]
  turns: Array<TurnRecord & { transitions: TransitionRecord[] }>
}

/** A session's messages and its turns with their transition logs; undefined for an unknown session. */
export async function viewSession(store: Store, sessionId: string): Promise<SessionView | undefined> {
  const session = await store.sessions.get(sessionId)
  if (!session) return undefined
  const messages = await store.messages.list(sessionId)
  const turns: SessionView['turns'] = []
  for (const id of new Set(messages.map((m) => m.info.turnId).filter((id): id is string => Boolean(id)))) {
    const turn = await store.turns.get(id)
    if (turn) turns.push({ ...turn, transitions: await store.transitions.list(id) })
  }
  return { session, messages, turns }
}

export interface TurnReplay {
  turn: TurnRecord
  transitions: TransitionRecord[]
  /**
   * True when the turn ended and its log is empty: `prune` deleted it. (A turn logs the
   * transition that ends it; only a turn that recovery could not resume, ended before its first
   * transition, has none of its own.) Its messages and parts stay.
   */
  pruned?: true
  /** The states the chart reaches from the log; absent when the log disagrees with the chart. */
  steps?: ReplayStep[]
  /** Why the log could not be replayed through the chart. */
  mismatch?: string
}

/** A turn's record, its transition log and the chart's replay of it; undefined for an unknown turn. */
export async function replayTurn(store: Store, turnId: string): Promise<TurnReplay | undefined> {
  const turn = await store.turns.get(turnId)
  if (!turn) return undefined
  const transitions = await store.transitions.list(turnId)
  if (turn.outcome && transitions.length === 0) return { turn, transitions, pruned: true }
  const input = (await store.turns.input(turnId)) as TurnInput
  try {
    return { turn, transitions, steps: replayTransitions(input, transitions).steps }
  } catch (error) {
    return { turn, transitions, mismatch: error instanceof Error ? error.message : String(error) }
  }
}
