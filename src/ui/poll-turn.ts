/**
 * Resuming a turn that runs in another process (several engines on one PostgreSQL database):
 * the stream is rebuilt by reading the turn's rows, every `intervalMs` and, when the engine
 * listens for PostgreSQL notifications, as soon as the running engine writes them (`changes`).
 * Text arrives in batches, one per flush of the running engine (`flushIntervalMs`), never twice.
 * Rows say what is, not what changed: `RowChanges` compares each read with the one before and
 * says it as the turn's own events would (`part.updated` with its `change`, `part.delta` with
 * the text beyond the last read's), which the same chunk transform maps. One read of the
 * session's messages and one of the turn row per read.
 */
import { structuredOutputOf } from '../turn/turn-result'
import { createUIMessageStream } from 'ai'
import { gateState, stepStreamState } from '../../machines/turn.machine'
import { Doorbell } from '../core/doorbell'
import type { Engine } from '../engine/engine'
import type { PartOrigin, ToolStage, TurnchartEvent } from '../core/bus'
import type { MessageInfo, Part } from '../core/types'
import { stageOf } from '../turn/turn-stream'
import { TurnChunks, waitingEnd, type TurnChunk, type TurnStreamEnd } from '../ui-stream/turn-chunks'
import type { TurnchartUIMessage, TurnStateData } from '../ui-stream/ui-messages'

/** Pushed news that a session's rows changed (PostgreSQL notifications), when the engine listens. */
export interface StoredRowsFeed {
  /**
   * Calls `onChange` when the session's rows change (and when changes may have been missed),
   * asking the engines that write them to say so, until the returned stop is called.
   */
  follow(sessionId: string, onChange: () => void): () => void
}

/** The session's turn that is not finished, per the database, or undefined. */
export async function unfinishedTurnId(engine: Engine, sessionId: string): Promise<string | undefined> {
  const session = await engine.getSession(sessionId)
  if (!session) return undefined
  const messages = await engine.messages(sessionId)
  const turnId = messages.map((m) => m.info.turnId).filter((id): id is string => id !== undefined).at(-1)
  if (!turnId) return undefined
  const record = await engine.getTurn(turnId)
  return record && record.outcome === null ? turnId : undefined
}

/** A turn as read from its rows. */
interface StoredTurn {
  /** Its answers and the user messages steered in, in order, with their parts. */
  messages: Array<{ info: MessageInfo; origin: PartOrigin; parts: Part[] }>
  state: TurnStateData
}

/**
 * What changed between two reads of a turn's rows, as the events the turn published: a
 * message or part not read before opens, a text grown since is a delta, a text ended or a
 * tool moved on is its change. It keeps, per part, what the last read had (text length, stage).
 */
class RowChanges {
  readonly #messages = new Map<string, string>()
  readonly #parts = new Map<string, { stage: string; length: number }>()

  events(turn: StoredTurn): TurnchartEvent[] {
    const events: TurnchartEvent[] = []
    for (const { info, origin, parts } of turn.messages) {
      const tokens = JSON.stringify(info.tokens ?? null)
      const before = this.#messages.get(info.id)
      if (before !== tokens) events.push({ type: 'message.updated', sessionId: info.sessionId, info, origin, change: before === undefined ? 'open' : 'usage' })
      this.#messages.set(info.id, tokens)
      for (const part of parts) {
        const stage = stageOf(part)
        const length = part.type === 'text' || part.type === 'reasoning' ? part.text.length : 0
        const seen = this.#parts.get(part.id)
        this.#parts.set(part.id, { stage, length })
        if (!seen) {
          events.push({ type: 'part.updated', sessionId: part.sessionId, part, origin, change: 'open' })
          continue
        }
        if ((part.type === 'text' || part.type === 'reasoning') && length > seen.length) {
          events.push({ type: 'part.delta', sessionId: part.sessionId, turnId: turn.state.turnId, messageId: part.messageId, partId: part.id, partType: part.type, field: 'text', delta: part.text.slice(seen.length) })
        }
        if (stage !== seen.stage) {
          events.push({ type: 'part.updated', sessionId: part.sessionId, part, origin, ...(part.type === 'tool' ? { change: 'stage', from: seen.stage as ToolStage } : { change: 'close' }) })
        }
      }
    }
    return events
  }
}

/** What reading a turn's rows needs of the engine (a closing engine's `followHandedOff` reader gives the same). */
type RowsReader = Pick<Engine, 'getTurn' | 'messages' | 'transitions'>

/** The turn as stored now: its messages and parts, its state and outcome. */
async function readTurnSnapshot(engine: RowsReader, sessionId: string, turnId: string): Promise<{ snapshot: StoredTurn; outcome: TurnStreamEnd | null }> {
  // The turn row first, then the messages: a turn's final parts commit no later than its
  // outcome, so an outcome seen here has all its text in the read that follows. Read together
  // (two connections on PostgreSQL), the messages could predate the outcome and the last
  // batch of text would never be streamed.
  const record = await engine.getTurn(turnId)
  const messages = await engine.messages(sessionId)
  // Its answers, and the user messages steered in after the first (the prompt comes before).
  const first = messages.findIndex((m) => m.info.role === 'assistant' && m.info.turnId === turnId)
  const own = first < 0 ? [] : messages.slice(first).filter((m) => m.info.turnId === turnId)
  return {
    snapshot: {
      messages: own.map(({ info, parts }) => ({ info, parts, origin: info.role === 'user' ? 'steer' : info.summary ? 'summary' : 'answer' })),
      state: { turnId, state: record?.state ?? stepStreamState, attempt: record?.attempt ?? 1, retryAt: record?.retryAt ?? null },
    },
    outcome: record?.outcome ?? null,
  }
}

/**
 * The UI message stream of a turn read from the database every `intervalMs` (default 250), and
 * at each change `changes` pushes: for a page that reattaches to a turn run by another engine
 * process.
 *
 * @example
 * const turnId = await unfinishedTurnId(engine, chatId)
 * if (turnId) return createUIMessageStreamResponse({ stream: pollTurnStream(engine, { id: turnId, sessionId: chatId }) })
 */
export function pollTurnStream(
  engine: Engine,
  turn: { id: string; sessionId: string },
  options: { intervalMs?: number; signal?: AbortSignal; changes?: StoredRowsFeed } = {},
): ReadableStream<TurnChunk> {
  return createUIMessageStream<TurnchartUIMessage>({
    execute: async ({ writer }) => {
      const chunks = new TurnChunks(turn.id, turn.sessionId, (chunk) => writer.write(chunk))
      await followRows(engine, turn, chunks, new RowChanges(), true, options)
    },
  })
}

/**
 * Reads the turn's rows until it ends (or waits for an approval, or `signal`), each read's
 * changes sent as chunks. `first`: the first read is the turn so far (a replay); otherwise
 * `changes` already holds what the stream sent, and every read says only what is new.
 */
async function followRows(
  engine: RowsReader,
  turn: { id: string; sessionId: string },
  chunks: TurnChunks,
  changes: RowChanges,
  first: boolean,
  options: { intervalMs?: number; signal?: AbortSignal; changes?: StoredRowsFeed },
): Promise<void> {
  const intervalMs = options.intervalMs ?? 250
  const bell = new Doorbell()
  // Followed before the first read: a change written between that read and the wait rings.
  const unfollow = options.changes?.follow(turn.sessionId, () => bell.ring())
  try {
    while (!options.signal?.aborted) {
      const { snapshot, outcome } = await readTurnSnapshot(engine, turn.sessionId, turn.id)
      const events = changes.events(snapshot)
      if (first) {
        // The first read is the turn so far: `start` names its first answer, as a replay's does.
        first = false
        chunks.replay(events, snapshot.state)
      } else {
        for (const event of events) chunks.handle(event)
        chunks.state(snapshot.state)
      }
      if (outcome === 'completed') {
        // Structured output's object, from the log row that completed the turn (as a live stream sends it).
        const found = structuredOutputOf(await engine.transitions(turn.id))
        if ('output' in found) chunks.handle({ type: 'turn.transition', sessionId: turn.sessionId, turnId: turn.id, seq: 0, from: gateState, event: 'gate.complete', to: 'completed', time: Date.now(), output: found.output })
      }
      const end = outcome ?? waitingEnd(snapshot.state.state)
      if (end) chunks.finish(end)
      if (chunks.end) return
      await bell.wait(intervalMs, options.signal)
    }
  } finally {
    unfollow?.()
  }
}

/**
 * A stream of a turn this engine handed off (`close({ handoff: true })`) goes on from the rows
 * the new owner writes: `sent` is the turn as the stream had it (the handing engine's replay
 * of it at its handoff: every part with its text so far), so each read says only what is new,
 * and every chunk is sent once. The closing engine keeps its database open until this ends.
 * Without a reader (the database is closed already) the stream fails, saying so.
 *
 * @example
 * toUIMessageStream(turn, turn, { afterHandoff: (chunks, sent) => followHandedOffTurn(engine, turn, chunks, sent, {}) })
 */
export async function followHandedOffTurn(
  engine: Engine,
  turn: { id: string; sessionId: string },
  chunks: TurnChunks,
  sent: TurnchartEvent[],
  options: { intervalMs?: number; signal?: AbortSignal },
): Promise<void> {
  const reader = engine.followHandedOff()
  if (!reader) return chunks.fail(`turn ${turn.id} was handed to another engine; reconnect to follow it`)
  try {
    const changes = new RowChanges()
    changes.events(storedTurnOf(sent, turn.id))
    await followRows(reader, turn, chunks, changes, false, { ...options, ...(engine.notifications ? { changes: engine.notifications } : {}) })
  } finally {
    reader.release()
  }
}

/** A turn's replay (its messages and parts as they are, `open`) as a read of its rows would give it. */
function storedTurnOf(events: TurnchartEvent[], turnId: string): StoredTurn {
  const messages = new Map<string, StoredTurn['messages'][number]>()
  for (const event of events) {
    if (event.type === 'message.updated') messages.set(event.info.id, { info: event.info, origin: event.origin, parts: messages.get(event.info.id)?.parts ?? [] })
    else if (event.type === 'part.updated') messages.get(event.part.messageId)?.parts.push(event.part)
  }
  return { messages: [...messages.values()], state: { turnId, state: gateState, attempt: 1, retryAt: null } }
}
