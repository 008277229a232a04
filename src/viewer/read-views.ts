/**
 * What the read-only CLI and the viewer show, computed from a repository (inside one read-only
 * transaction): session summaries, a session's conversation with its turns, a turn's replay.
 */
import { structuredOutputOf } from '../turn/turn-result'
import type { TurnInput } from '../../machines/turn.types'
import type { ScheduleRecord, Store } from '../store/store'
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

/** A turn with its transition log and the child turns its tools started (run trees), theirs under them. */
export interface TurnTree extends TurnRecord {
  transitions: TransitionRecord[]
  /** Structured output: the final answer's parsed object, as the step gate's `gate.complete` row stores it (absent: none). */
  output?: unknown
  /** The child turns, oldest first, each with the messages of its own (child) session. */
  children: ChildTurnTree[]
}

export interface ChildTurnTree extends TurnTree {
  messages: MessageWithParts[]
}

export interface SessionView {
  session: SessionInfo
  messages: MessageWithParts[]
  turns: TurnTree[]
  /** The session's schedules (`engine.schedule`), oldest first. */
  schedules: ScheduleRecord[]
}

/** Trees deeper than this are cut (a runaway recursion of agent tools must not hang a reader). */
const maxTreeDepth = 16

async function turnTree(store: Store, turn: TurnRecord, depth: number): Promise<TurnTree> {
  const children: ChildTurnTree[] = []
  if (depth < maxTreeDepth) {
    for (const child of await store.turns.children(turn.id)) {
      // One child session per call, holding that child's turn only.
      const messages = (await store.messages.list(child.sessionId)).filter((m) => m.info.turnId === child.id)
      children.push({ ...(await turnTree(store, child, depth + 1)), messages })
    }
  }
  const transitions = await store.transitions.list(turn.id)
  return { ...turn, transitions, ...structuredOutputOf(transitions), children }
}

/**
 * A session's messages and its turns with their transition logs and their run trees (child
 * turns under their parent); undefined for an unknown session.
 */
export async function viewSession(store: Store, sessionId: string): Promise<SessionView | undefined> {
  const session = await store.sessions.get(sessionId)
  if (!session) return undefined
  const messages = await store.messages.list(sessionId)
  const turns: SessionView['turns'] = []
  for (const id of new Set(messages.map((m) => m.info.turnId).filter((id): id is string => Boolean(id)))) {
    const turn = await store.turns.get(id)
    if (turn) turns.push(await turnTree(store, turn, 0))
  }
  return { session, messages, turns, schedules: (await store.schedules?.list(sessionId)) ?? [] }
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
