/**
 * Turns in memory: the turn row, its ownership (owner, lease, epoch: the fence every write of a
 * running turn checks), its stored options and usage. Same conditions as the SQL updates: a
 * fenced write or a claim that matches no row changes nothing.
 */
import { TurnOwnershipLostError, type SerializedError } from '../../core/errors'
import type { StoredTurnOptions, TurnRecord, TurnUsage } from '../../core/types'
import type { ClaimExpectation, OpenTurn, TreeTurn, TurnFence, TurnStore, TurnUpdate } from '../store'
import type { Access } from './access'
import { compareIds, foreignKeyViolation, parseJsonOrNull, toJson, uniqueViolation, type Tables, type TurnRow } from './tables'

function turnFromRow(row: TurnRow): TurnRecord {
  const options = parseJsonOrNull<StoredTurnOptions>(row.options)
  return {
    id: row.id,
    sessionId: row.sessionId,
    state: row.state,
    outcome: row.outcome,
    step: row.step,
    attempt: row.attempt,
    retryAt: row.retryAt,
    error: parseJsonOrNull<SerializedError>(row.error),
    time: { created: row.created, updated: row.updated },
    owner: row.owner,
    leaseUntil: row.leaseUntil,
    epoch: row.epoch,
    ...(options ? { options } : {}),
    ...(row.parentTurnId ? { parentTurnId: row.parentTurnId } : {}),
    ...(row.parentCallId ? { parentCallId: row.parentCallId } : {}),
    ...(row.rootTurnId ? { rootTurnId: row.rootTurnId } : {}),
  }
}

/** The unfinished turn owned by `fence.owner` at `fence.epoch`: what a fenced write may change. */
function fenced(t: Tables, id: string, fence: TurnFence): TurnRow | undefined {
  const row = t.turns.get(id)
  return row && row.outcome === null && row.owner === fence.owner && row.epoch === fence.epoch ? row : undefined
}

export class MemoryTurns implements TurnStore {
  constructor(private readonly db: Access) {}

  insert(turn: TurnRecord, input: unknown): Promise<void> {
    return this.db.run((t) => {
      if (t.turns.has(turn.id)) throw uniqueViolation('turnchart_turns', 'id')
      if (!t.sessions.has(turn.sessionId)) throw foreignKeyViolation('turnchart_turns', 'session_id', turn.sessionId)
      if (turn.parentTurnId && [...t.turns.values()].some((row) => row.parentTurnId === turn.parentTurnId && row.parentCallId === (turn.parentCallId ?? null))) {
        throw uniqueViolation('turnchart_turns', 'parent_turn_id, turnchart_turns.parent_call_id')
      }
      const json = toJson(input)
      if (json === undefined) throw new Error('NOT NULL constraint failed: turnchart_turns.input')
      // As the SQL insert: the epoch starts at 0; options and usage are written by their own calls.
      t.put('turns', turn.id, {
        id: turn.id,
        sessionId: turn.sessionId,
        state: turn.state,
        outcome: turn.outcome ?? null,
        step: turn.step,
        attempt: turn.attempt,
        retryAt: turn.retryAt ?? null,
        error: turn.error ? toJson(turn.error) : null,
        input: json,
        created: turn.time.created,
        updated: turn.time.updated,
        owner: turn.owner ?? null,
        leaseUntil: turn.leaseUntil ?? null,
        epoch: 0,
        options: null,
        usage: null,
        parentTurnId: turn.parentTurnId ?? null,
        parentCallId: turn.parentCallId ?? null,
        rootTurnId: turn.rootTurnId ?? null,
      })
    })
  }

  children(turnId: string): Promise<TurnRecord[]> {
    return this.db.run((t) =>
      [...t.turns.values()]
        .filter((row) => row.parentTurnId === turnId)
        .sort((a, b) => compareIds(a.id, b.id))
        .map(turnFromRow),
    )
  }

  childOfCall(parentTurnId: string, callId: string): Promise<TurnRecord | undefined> {
    return this.db.run((t) => {
      const row = [...t.turns.values()].find((r) => r.parentTurnId === parentTurnId && r.parentCallId === callId)
      return row && turnFromRow(row)
    })
  }

  descendants(turnIds: string[]): Promise<TreeTurn[]> {
    return this.db.run((t) => {
      const found: TreeTurn[] = []
      for (let level = new Set(turnIds); level.size > 0; ) {
        const rows = [...t.turns.values()].filter((row) => row.parentTurnId !== null && level.has(row.parentTurnId))
        found.push(...rows.map((row) => ({ id: row.id, parentTurnId: row.parentTurnId!, sessionId: row.sessionId, step: row.step, usage: parseJsonOrNull<TurnUsage>(row.usage) })))
        level = new Set(rows.map((row) => row.id))
      }
      return found.sort((a, b) => compareIds(a.id, b.id))
    })
  }

  update(id: string, update: TurnUpdate, now: number, fence?: TurnFence): Promise<void> {
    return this.db.run((t) => {
      const row = fence ? fenced(t, id, fence) : t.turns.get(id)
      if (!row) {
        if (fence) throw new TurnOwnershipLostError(id, fence.owner)
        return
      }
      // Fenced, the outcome is written only when there is one (the turn is unfinished: it stays null).
      const outcome = fence ? (update.outcome ? update.outcome : row.outcome) : update.outcome !== undefined ? update.outcome : row.outcome
      t.put('turns', id, {
        ...row,
        state: update.state,
        outcome,
        step: update.step,
        attempt: update.attempt,
        retryAt: update.retryAt,
        error: update.error ? toJson(update.error) : null,
        updated: now,
        ...(update.usage ? { usage: toJson(update.usage) } : {}),
      })
    })
  }

  checkFence(id: string, fence: TurnFence): Promise<void> {
    return this.db.run((t) => {
      if (!fenced(t, id, fence)) throw new TurnOwnershipLostError(id, fence.owner)
    })
  }

  get(id: string): Promise<TurnRecord | undefined> {
    return this.db.run((t) => {
      const row = t.turns.get(id)
      return row && turnFromRow(row)
    })
  }

  input(id: string): Promise<unknown> {
    return this.db.run((t) => {
      const row = t.turns.get(id)
      return row ? JSON.parse(row.input) : undefined
    })
  }

  openOfSession(sessionId: string): Promise<OpenTurn | undefined> {
    return this.db.run((t) => {
      const row = openTurns(t).find((turn) => turn.sessionId === sessionId)
      return row && { id: row.id, owner: row.owner, leaseUntil: row.leaseUntil }
    })
  }

  open(): Promise<Array<TurnRecord & { input: unknown }>> {
    return this.db.run((t) => openTurns(t).map((row) => ({ ...turnFromRow(row), input: JSON.parse(row.input) })))
  }

  due(now: number): Promise<TurnRecord[]> {
    return this.db.run((t) => openTurns(t).filter((row) => row.retryAt !== null && row.retryAt <= now).map(turnFromRow))
  }

  nextDeadline(states: readonly string[], after: number): Promise<number | null> {
    return this.db.run((t) => {
      const deadlines = openTurns(t).flatMap((row) => (states.includes(row.state) && row.retryAt !== null && row.retryAt > after ? [row.retryAt] : []))
      return deadlines.length ? Math.min(...deadlines) : null
    })
  }

  claim(id: string, expected: ClaimExpectation, owner: string, leaseUntil: number | null): Promise<TurnFence | null> {
    return this.db.run((t) => {
      const row = t.turns.get(id)
      if (!row || row.outcome !== null || row.epoch !== expected.epoch || row.owner !== expected.owner) return null
      if (expected.leaseUntil !== undefined && row.leaseUntil !== expected.leaseUntil) return null
      t.put('turns', id, { ...row, owner, leaseUntil, epoch: expected.epoch + 1 })
      return { owner, epoch: expected.epoch + 1 }
    })
  }

  renewLeases(turns: Array<{ id: string; epoch: number }>, owner: string, leaseUntil: number): Promise<Set<string>> {
    return this.db.run((t) => {
      const renewed = new Set<string>()
      for (const { id, epoch } of turns) {
        const row = fenced(t, id, { owner, epoch })
        if (!row) continue
        t.put('turns', id, { ...row, leaseUntil })
        renewed.add(id)
      }
      return renewed
    })
  }

  release(owner: string, turnIds?: readonly string[]): Promise<void> {
    return this.db.run((t) => {
      for (const row of openTurns(t)) if (row.owner === owner && (!turnIds || turnIds.includes(row.id))) t.put('turns', row.id, { ...row, owner: null, leaseUntil: null })
    })
  }

  setOptions(id: string, options: StoredTurnOptions): Promise<void> {
    return this.set(id, { options: toJson(options) })
  }

  options(id: string): Promise<StoredTurnOptions | null> {
    return this.db.run((t) => parseJsonOrNull<StoredTurnOptions>(t.turns.get(id)?.options))
  }

  usages(sessionId: string): Promise<Array<{ id: string; usage: TurnUsage | null }>> {
    return this.db.run((t) =>
      [...t.turns.values()]
        .filter((row) => row.sessionId === sessionId)
        .sort((a, b) => compareIds(a.id, b.id))
        .map((row) => ({ id: row.id, usage: parseJsonOrNull<TurnUsage>(row.usage) })),
    )
  }

  private set(id: string, change: Partial<TurnRow>): Promise<void> {
    return this.db.run((t) => {
      const row = t.turns.get(id)
      if (row) t.put('turns', id, { ...row, ...change })
    })
  }
}

/** Unfinished turns, oldest first. */
function openTurns(t: Tables): TurnRow[] {
  return [...t.turns.values()].filter((row) => row.outcome === null).sort((a, b) => compareIds(a.id, b.id))
}
