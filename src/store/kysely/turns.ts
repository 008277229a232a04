/**
 * Turns on Kysely: the turn row (state, step, attempt, retry deadline, outcome), its ownership
 * (owner, lease, epoch: the fence every write of a running turn checks), its stored options
 * and usage. The fenced update and the fence check are hot writes: precompiled.
 */
import type { Kysely, Selectable } from 'kysely'
import { TurnOwnershipLostError, type SerializedError } from '../../core/errors'
import type { StoredTurnOptions, TurnOutcome, TurnRecord, TurnUsage } from '../../core/types'
import { precompiledQuery } from '../precompiled-query'
import type { TurnTable, TurnchartDatabase } from '../schema'
import type { ClaimExpectation, OpenTurn, TreeTurn, TurnFence, TurnStore, TurnUpdate } from '../store'
import { num, parseJsonOrNull, type Executor } from './rows'

function turnFromRow(row: Selectable<TurnTable>): TurnRecord {
  const options = parseJsonOrNull<StoredTurnOptions>(row.options)
  return {
    id: row.id,
    sessionId: row.session_id,
    state: row.state,
    outcome: row.outcome as TurnOutcome | null,
    step: row.step,
    attempt: row.attempt,
    retryAt: row.retry_at === null ? null : num(row.retry_at),
    error: parseJsonOrNull<SerializedError>(row.error),
    time: { created: num(row.created_at), updated: num(row.updated_at) },
    owner: row.owner,
    leaseUntil: row.lease_until === null ? null : num(row.lease_until),
    epoch: num(row.epoch),
    ...(options ? { options } : {}),
    ...(row.parent_turn_id ? { parentTurnId: row.parent_turn_id } : {}),
    ...(row.parent_call_id ? { parentCallId: row.parent_call_id } : {}),
    ...(row.root_turn_id ? { rootTurnId: row.root_turn_id } : {}),
  }
}

export class KyselyTurns implements TurnStore {
  constructor(private readonly db: Executor) {}

  async insert(turn: TurnRecord, input: unknown): Promise<void> {
    await this.db
      .insertInto('turnchart_turns')
      .values({
        id: turn.id,
        session_id: turn.sessionId,
        state: turn.state,
        outcome: turn.outcome,
        step: turn.step,
        attempt: turn.attempt,
        retry_at: turn.retryAt,
        error: turn.error ? JSON.stringify(turn.error) : null,
        input: JSON.stringify(input),
        created_at: turn.time.created,
        updated_at: turn.time.updated,
        owner: turn.owner ?? null,
        lease_until: turn.leaseUntil ?? null,
        parent_turn_id: turn.parentTurnId ?? null,
        parent_call_id: turn.parentCallId ?? null,
        root_turn_id: turn.rootTurnId ?? null,
      })
      .execute()
  }

  async children(turnId: string): Promise<TurnRecord[]> {
    const rows = await this.db.selectFrom('turnchart_turns').selectAll().where('parent_turn_id', '=', turnId).orderBy('id').execute()
    return rows.map(turnFromRow)
  }

  async childOfCall(parentTurnId: string, callId: string): Promise<TurnRecord | undefined> {
    const row = await this.db.selectFrom('turnchart_turns').selectAll().where('parent_turn_id', '=', parentTurnId).where('parent_call_id', '=', callId).executeTakeFirst()
    return row && turnFromRow(row)
  }

  async descendants(turnIds: string[]): Promise<TreeTurn[]> {
    const found: TreeTurn[] = []
    // One query per level of the tree (trees are shallow), not per turn.
    for (let level = turnIds; level.length > 0; ) {
      const rows = await this.db
        .selectFrom('turnchart_turns')
        .select(['id', 'parent_turn_id', 'session_id', 'step', 'usage'])
        .where('parent_turn_id', 'in', level)
        .orderBy('id')
        .execute()
      found.push(...rows.map((row) => ({ id: row.id, parentTurnId: row.parent_turn_id!, sessionId: row.session_id, step: row.step, usage: parseJsonOrNull<TurnUsage>(row.usage) })))
      level = rows.map((row) => row.id)
    }
    return found.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
  }

  async update(id: string, update: TurnUpdate, now: number, fence?: TurnFence): Promise<void> {
    if (fence) {
      // The hot path (every transition row). The outcome is set only when there is one: a SET
      // of that column would update the open-turns index (on SQLite) for nothing.
      const query = !update.outcome ? updateFencedTurnQuery : update.usage ? endFencedTurnWithUsageQuery : endFencedTurnQuery
      const result = await query.execute(this.db as Kysely<TurnchartDatabase>, {
        state: update.state,
        outcome: update.outcome ?? null, // not a parameter of updateFencedTurnQuery
        usage: update.usage ? JSON.stringify(update.usage) : null, // a parameter of endFencedTurnWithUsageQuery only
        step: update.step,
        attempt: update.attempt,
        retry_at: update.retryAt,
        error: update.error ? JSON.stringify(update.error) : null,
        updated_at: now,
        id,
        owner: fence.owner,
        epoch: fence.epoch,
      })
      if (Number(result.numAffectedRows) !== 1) throw new TurnOwnershipLostError(id, fence.owner)
      return
    }
    await this.db
      .updateTable('turnchart_turns')
      .set({
        state: update.state,
        ...(update.outcome !== undefined ? { outcome: update.outcome } : {}),
        step: update.step,
        attempt: update.attempt,
        retry_at: update.retryAt,
        error: update.error ? JSON.stringify(update.error) : null,
        updated_at: now,
        ...(update.usage ? { usage: JSON.stringify(update.usage) } : {}),
      })
      .where('id', '=', id)
      .execute()
  }

  async checkFence(id: string, fence: TurnFence): Promise<void> {
    // On PostgreSQL the row lock this UPDATE takes holds off a concurrent claim until the commit.
    const result = await checkFenceQuery.execute(this.db as Kysely<TurnchartDatabase>, { id, owner: fence.owner, epoch: fence.epoch })
    if (Number(result.numAffectedRows) !== 1) throw new TurnOwnershipLostError(id, fence.owner)
  }

  async get(id: string): Promise<TurnRecord | undefined> {
    const row = await this.db.selectFrom('turnchart_turns').selectAll().where('id', '=', id).executeTakeFirst()
    return row && turnFromRow(row)
  }

  async input(id: string): Promise<unknown> {
    const row = await this.db.selectFrom('turnchart_turns').select('input').where('id', '=', id).executeTakeFirst()
    return row ? JSON.parse(row.input) : undefined
  }

  async openOfSession(sessionId: string): Promise<OpenTurn | undefined> {
    const row = await this.db
      .selectFrom('turnchart_turns')
      .select(['id', 'owner', 'lease_until'])
      .where('session_id', '=', sessionId)
      .where('outcome', 'is', null)
      .executeTakeFirst()
    return row && { id: row.id, owner: row.owner, leaseUntil: row.lease_until === null ? null : num(row.lease_until) }
  }

  async open(): Promise<Array<TurnRecord & { input: unknown }>> {
    const rows = await this.db.selectFrom('turnchart_turns').selectAll().where('outcome', 'is', null).orderBy('id').execute()
    return rows.map((row) => ({ ...turnFromRow(row), input: JSON.parse(row.input) }))
  }

  async due(now: number): Promise<TurnRecord[]> {
    const rows = await this.db.selectFrom('turnchart_turns').selectAll().where('outcome', 'is', null).where('retry_at', '<=', now).orderBy('id').execute()
    return rows.map(turnFromRow)
  }

  async nextDeadline(states: readonly string[], after: number): Promise<number | null> {
    if (states.length === 0) return null
    const row = await this.db
      .selectFrom('turnchart_turns')
      .select((eb) => eb.fn.min('retry_at').as('next'))
      .where('outcome', 'is', null)
      .where('state', 'in', [...states])
      .where('retry_at', '>', after)
      .executeTakeFirst()
    return row?.next === null || row?.next === undefined ? null : Number(row.next)
  }

  async claim(id: string, expected: ClaimExpectation, owner: string, leaseUntil: number | null): Promise<TurnFence | null> {
    let query = this.db
      .updateTable('turnchart_turns')
      .set({ owner, lease_until: leaseUntil, epoch: expected.epoch + 1 })
      .where('id', '=', id)
      .where('outcome', 'is', null)
      .where('epoch', '=', expected.epoch)
    query = expected.owner === null ? query.where('owner', 'is', null) : query.where('owner', '=', expected.owner)
    if (expected.leaseUntil !== undefined) query = expected.leaseUntil === null ? query.where('lease_until', 'is', null) : query.where('lease_until', '=', expected.leaseUntil)
    const result = await query.executeTakeFirst()
    return Number(result.numUpdatedRows) === 1 ? { owner, epoch: expected.epoch + 1 } : null
  }

  async renewLeases(turns: Array<{ id: string; epoch: number }>, owner: string, leaseUntil: number): Promise<Set<string>> {
    if (turns.length === 0) return new Set()
    // Each turn at the epoch its runner holds: a turn claimed again since (even by this owner) is not this runner's to extend.
    const rows = await this.db
      .updateTable('turnchart_turns')
      .set({ lease_until: leaseUntil })
      .where((eb) => eb.or(turns.map((t) => eb.and([eb('id', '=', t.id), eb('epoch', '=', t.epoch)]))))
      .where('owner', '=', owner)
      .where('outcome', 'is', null)
      .returning('id')
      .execute()
    return new Set(rows.map((row) => row.id))
  }

  async release(owner: string, turnIds?: readonly string[]): Promise<void> {
    if (turnIds && turnIds.length === 0) return
    let query = this.db.updateTable('turnchart_turns').set({ owner: null, lease_until: null }).where('owner', '=', owner).where('outcome', 'is', null)
    if (turnIds) query = query.where('id', 'in', [...turnIds])
    await query.execute()
  }

  async setOptions(id: string, options: StoredTurnOptions): Promise<void> {
    await this.db.updateTable('turnchart_turns').set({ options: JSON.stringify(options) }).where('id', '=', id).execute()
  }

  async options(id: string): Promise<StoredTurnOptions | null> {
    const row = await this.db.selectFrom('turnchart_turns').select('options').where('id', '=', id).executeTakeFirst()
    return parseJsonOrNull<StoredTurnOptions>(row?.options)
  }

  async usages(sessionId: string): Promise<Array<{ id: string; usage: TurnUsage | null }>> {
    const rows = await this.db.selectFrom('turnchart_turns').select(['id', 'usage']).where('session_id', '=', sessionId).orderBy('id').execute()
    return rows.map((row) => ({ id: row.id, usage: parseJsonOrNull<TurnUsage>(row.usage) }))
  }
}

const checkFenceQuery = precompiledQuery(['id', 'owner', 'epoch'], (db, v) =>
  db
    .updateTable('turnchart_turns')
    .set({ epoch: v.epoch as number })
    .where('id', '=', v.id as string)
    .where('owner', '=', v.owner as string)
    .where('epoch', '=', v.epoch as number)
    .where('outcome', 'is', null),
)

const turnColumns = ['state', 'step', 'attempt', 'retry_at', 'error', 'updated_at', 'id', 'owner', 'epoch'] as const
/** The columns each fenced update sets beyond a step's. */
const endColumns = { step: [], end: ['outcome'], 'end with usage': ['outcome', 'usage'] } as const

const updateFencedTurnQuery = fencedTurnUpdate('step')
const endFencedTurnQuery = fencedTurnUpdate('end')
const endFencedTurnWithUsageQuery = fencedTurnUpdate('end with usage')

/** The fenced update of a step (no outcome), of a turn's end, and of its end with its usage. */
function fencedTurnUpdate(kind: keyof typeof endColumns) {
  return precompiledQuery([...turnColumns, ...endColumns[kind]], (db, v) =>
    db
      .updateTable('turnchart_turns')
      .set({
        state: v.state as string,
        ...(kind !== 'step' ? { outcome: v.outcome as string } : {}),
        ...(kind === 'end with usage' ? { usage: v.usage as string } : {}),
        step: v.step as number,
        attempt: v.attempt as number,
        retry_at: v.retry_at as number | null,
        error: v.error as string | null,
        updated_at: v.updated_at as number,
      })
      .where('id', '=', v.id as string)
      .where('owner', '=', v.owner as string)
      .where('epoch', '=', v.epoch as number)
      .where('outcome', 'is', null),
  )
}
