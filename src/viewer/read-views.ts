/**
 * What the read-only CLI and the viewer show, computed from a repository (inside one read-only
 * transaction): session summaries, a session's conversation with its turns, a turn's replay.
 */
import type { TurnInput } from '../../machines/turn.types'
import type { Repository } from '../store/repository'
import { replayTransitions, type ReplayStep } from '../turn/replay'
import type { MessageWithParts, SessionInfo, TransitionRecord, TurnRecord } from '../core/types'

export interface SessionSummary extends SessionInfo {
  messages: number
  turns: Array<{ id: string; state: string; outcome: string | null }>
}

/** Each session with its message count and its turns (state and outcome), oldest first. */
export async function summarizeSessions(repo: Repository): Promise<SessionSummary[]> {
  const out: SessionSummary[] = []
  for (const session of await repo.listSessions()) {
    const messages = await repo.messages(session.id)
    const turnIds = [...new Set(messages.map((m) => m.info.turnId).filter((id): id is string => Boolean(id)))]
    const turns = []
    for (const id of turnIds) {
      const turn = await repo.getTurn(id)
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
export async function viewSession(repo: Repository, sessionId: string): Promise<SessionView | undefined> {
  const session = await repo.getSession(sessionId)
  if (!session) return undefined
  const messages = await repo.messages(sessionId)
  const turns: SessionView['turns'] = []
  for (const id of new Set(messages.map((m) => m.info.turnId).filter((id): id is string => Boolean(id)))) {
    const turn = await repo.getTurn(id)
    if (turn) turns.push({ ...turn, transitions: await repo.transitions(id) })
  }
  return { session, messages, turns }
}

export interface TurnReplay {
  turn: TurnRecord
  transitions: TransitionRecord[]
  /** The states the chart reaches from the log; absent when the log disagrees with the chart. */
  steps?: ReplayStep[]
  /** Why the log could not be replayed through the chart. */
  mismatch?: string
}

/** A turn's record, its transition log and the chart's replay of it; undefined for an unknown turn. */
export async function replayTurn(repo: Repository, turnId: string): Promise<TurnReplay | undefined> {
  const turn = await repo.getTurn(turnId)
  if (!turn) return undefined
  const transitions = await repo.transitions(turnId)
  const input = (await repo.turnInput(turnId)) as TurnInput
  try {
    return { turn, transitions, steps: replayTransitions(input, transitions).steps }
  } catch (error) {
    return { turn, transitions, mismatch: error instanceof Error ? error.message : String(error) }
  }
}
