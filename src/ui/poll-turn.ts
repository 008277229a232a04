/**
 * Resuming a turn that runs in another process (several engines on one PostgreSQL database):
 * the stream is rebuilt by reading the turn's rows, every `intervalMs` and, when the engine
 * listens for PostgreSQL notifications, as soon as the running engine writes them (`changes`).
 * Text arrives in batches, one per flush of the running engine (`flushIntervalMs`), never twice:
 * the chunk writer sends only the text beyond what it sent. One read of the session's messages
 * and one of the turn row per read.
 */
import { createUIMessageStream } from 'ai'
import { Doorbell } from '../core/doorbell'
import type { Engine } from '../engine/engine'
import type { LiveTurnSnapshot } from '../ui-stream/live-turns'
import { TurnChunkWriter, type TurnChunk, type TurnStreamEnd } from '../ui-stream/turn-chunks'
import type { TurnchartUIMessage } from '../ui-stream/ui-messages'

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

/** The turn as stored now: its messages and parts, its state and outcome. */
async function readTurnSnapshot(engine: Engine, sessionId: string, turnId: string): Promise<{ snapshot: LiveTurnSnapshot; outcome: TurnStreamEnd | null }> {
  const [messages, record] = await Promise.all([engine.messages(sessionId), engine.getTurn(turnId)])
  // Its answers, and the user messages steered in after the first (the prompt comes before).
  const first = messages.findIndex((m) => m.info.role === 'assistant' && m.info.turnId === turnId)
  const own = first < 0 ? [] : messages.slice(first).filter((m) => m.info.turnId === turnId)
  return {
    snapshot: {
      turnId,
      sessionId,
      messages: own.map((m) => m.info),
      parts: own.flatMap((m) => m.parts),
      state: { turnId, state: record?.state ?? 'streaming', attempt: record?.attempt ?? 1, retryAt: record?.retryAt ?? null },
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
  const intervalMs = options.intervalMs ?? 250
  return createUIMessageStream<TurnchartUIMessage>({
    execute: async ({ writer }) => {
      const chunks = new TurnChunkWriter(turn.id, turn.sessionId, (chunk) => writer.write(chunk))
      const bell = new Doorbell()
      // Followed before the first read: a change written between that read and the wait rings.
      const unfollow = options.changes?.follow(turn.sessionId, () => bell.ring())
      try {
        while (!options.signal?.aborted) {
          const { snapshot, outcome } = await readTurnSnapshot(engine, turn.sessionId, turn.id)
          chunks.sync(snapshot, outcome)
          if (chunks.end) return
          await bell.wait(intervalMs, options.signal)
        }
      } finally {
        unfollow?.()
      }
    },
  })
}
