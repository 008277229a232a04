/**
 * The repository: every read and write of turnchart's tables. Runs unchanged on SQLite and
 * PostgreSQL. JSON columns are parsed here, explicitly.
 */
import type { Kysely, Selectable, Transaction } from 'kysely'
import { TurnOwnershipLostError, type SerializedError } from '../core/errors/errors'
import type {
  MessageInfo,
  MessageWithParts,
  Part,
  SessionInfo,
  TransitionRecord,
  TurnOutcome,
  TurnRecord,
} from '../core/types'
import type { GroupCommit } from './sqlite/group-commit'
import { precompiledQuery } from './precompiled-query'
import type { SessionTable, TurnchartDatabase } from './schema'

type Executor = Kysely<TurnchartDatabase> | Transaction<TurnchartDatabase>

export interface TurnUpdate {
  state: string
  outcome?: TurnOutcome | null
  step: number
  attempt: number
  retryAt: number | null
  error: SerializedError | null
}

/** Who may write a running turn: its owner at the epoch of its claim (the fencing token). */
export interface TurnFence {
  owner: string
  epoch: number
}

function messageData(info: MessageInfo): string {
  const { id: _id, sessionId: _s, role: _r, turnId: _t, summary: _su, ...rest } = info
  return JSON.stringify({ ...rest })
}

/** A part's JSON without the fields its columns hold (id, session, message, type): less to store. */
function partData(part: Part): string {
  const { id: _id, sessionId: _session, messageId: _message, type: _type, ...rest } = part
  return JSON.stringify(rest)
}

function num(value: unknown): number {
  // PostgreSQL returns bigint columns as strings.
  return typeof value === 'number' ? value : Number(value)
}

function sessionFromRow(row: Selectable<SessionTable>): SessionInfo {
  return {
    id: row.id,
    title: row.title,
    time: { created: num(row.created_at), updated: num(row.updated_at) },
    ...(row.defaults ? { defaults: JSON.parse(row.defaults) as SessionInfo['defaults'] } : {}),
    ...(row.reverted_to ? { revertedTo: row.reverted_to } : {}),
  }
}

export class Repository {
  /**
   * @param verify run before each transaction; throws when writing is no longer safe.
   * @param group on SQLite: transactions asked for together share one commit (group-commit.ts).
   */
  constructor(
    readonly db: Executor,
    private readonly verify?: () => void,
    private readonly group?: GroupCommit<TurnchartDatabase>,
  ) {}

  /**
   * Runs `fn` in one transaction with a repository bound to it. With group commit, the
   * transaction may share its commit with others; it still succeeds or fails alone.
   *
   * @example
   * await repo.transaction(async (tx) => { await tx.upsertParts(parts); await tx.appendTransition(row) })
   */
  async transaction<T>(fn: (tx: Repository) => Promise<T>): Promise<T> {
    if (this.db.isTransaction) return fn(this)
    if (this.group) return this.group.run((trx) => fn(new Repository(trx)))
    this.verify?.()
    // A controlled transaction, so that a failing ROLLBACK cannot hide the error that caused it:
    // SQLite rolls back by itself on SQLITE_FULL or an I/O error, and the ROLLBACK that follows
    // then fails with "cannot rollback - no transaction is active".
    const trx = await (this.db as Kysely<TurnchartDatabase>).startTransaction().execute()
    try {
      const result = await fn(new Repository(trx))
      await trx.commit().execute()
      return result
    } catch (error) {
      await trx.rollback().execute().catch(() => undefined)
      throw error
    }
  }

  async insertSession(session: SessionInfo): Promise<void> {
    await this.db
      .insertInto('turnchart_sessions')
      .values({
        id: session.id,
        title: session.title,
        created_at: session.time.created,
        updated_at: session.time.updated,
        defaults: session.defaults ? JSON.stringify(session.defaults) : null,
      })
      .execute()
  }

  async getSession(id: string): Promise<SessionInfo | undefined> {
    const row = await this.db.selectFrom('turnchart_sessions').selectAll().where('id', '=', id).executeTakeFirst()
    return row && sessionFromRow(row)
  }

  async listSessions(): Promise<SessionInfo[]> {
    const rows = await this.db.selectFrom('turnchart_sessions').selectAll().orderBy('id').execute()
    return rows.map(sessionFromRow)
  }

  async upsertMessage(info: MessageInfo): Promise<void> {
    await upsertMessageQuery.execute(this.db as Kysely<TurnchartDatabase>, {
      id: info.id,
      session_id: info.sessionId,
      turn_id: info.turnId ?? null,
      role: info.role,
      summary: info.summary ? 1 : 0,
      created_at: info.time.created,
      data: messageData(info),
    })
  }

  /** Inserts or replaces parts: one statement per call (per 64 parts). */
  async upsertParts(parts: Part[], now: number): Promise<void> {
    for (let start = 0; start < parts.length; start += maxPartsPerStatement) {
      const chunk = parts.slice(start, start + maxPartsPerStatement)
      const values: Record<string, unknown> = {}
      chunk.forEach((part, i) => {
        values[`id${i}`] = part.id
        values[`session${i}`] = part.sessionId
        values[`message${i}`] = part.messageId
        values[`type${i}`] = part.type
        values[`data${i}`] = partData(part)
        values[`at${i}`] = now
      })
      await upsertPartsQuery(chunk.length).execute(this.db as Kysely<TurnchartDatabase>, values)
    }
  }

  /**
   * Messages of a session with their parts, in order. With `fromLatestSummary`, starts at the
   * latest compaction summary (what the model is sent); otherwise the whole conversation.
   */
  async messages(sessionId: string, options: { fromLatestSummary?: boolean } = {}): Promise<MessageWithParts[]> {
    let from: string | undefined
    if (options.fromLatestSummary) {
      const latest = await this.db
        .selectFrom('turnchart_messages')
        .select('id')
        .where('session_id', '=', sessionId)
        .where('summary', '=', 1)
        .orderBy('id', 'desc')
        .limit(1)
        .executeTakeFirst()
      from = latest?.id
    }
    let messageQuery = this.db.selectFrom('turnchart_messages').selectAll().where('session_id', '=', sessionId)
    let partQuery = this.db.selectFrom('turnchart_parts').select(['id', 'session_id', 'message_id', 'type', 'data']).where('session_id', '=', sessionId)
    if (from) {
      messageQuery = messageQuery.where('id', '>=', from)
      partQuery = partQuery.where('message_id', '>=', from)
    }
    const [messages, parts] = await Promise.all([messageQuery.orderBy('id').execute(), partQuery.orderBy('id').execute()])
    const byMessage = new Map<string, Part[]>()
    for (const row of parts) {
      const list = byMessage.get(row.message_id)
      const part = { id: row.id, sessionId: row.session_id, messageId: row.message_id, type: row.type, ...JSON.parse(row.data) } as Part
      if (list) list.push(part)
      else byMessage.set(row.message_id, [part])
    }
    return messages.map((row) => {
      const info: MessageInfo = {
        ...(JSON.parse(row.data) as Omit<MessageInfo, 'id' | 'sessionId' | 'role'>),
        id: row.id,
        sessionId: row.session_id,
        role: row.role,
        ...(row.turn_id ? { turnId: row.turn_id } : {}),
        ...(row.summary ? { summary: true } : {}),
      }
      return { info, parts: byMessage.get(row.id) ?? [] }
    })
  }

  async insertTurn(turn: TurnRecord, input: unknown): Promise<void> {
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
      })
      .execute()
  }

  /**
   * Updates a running turn's row. With `fence`, only while that engine still owns the turn at
   * that epoch: otherwise throws `TurnOwnershipLostError` (and the transaction rolls back).
   */
  async updateTurn(id: string, update: TurnUpdate, now: number, fence?: TurnFence): Promise<void> {
    if (fence) {
      // The hot path (every transition row): precompiled. The outcome is set only when there is
      // one: a SET of that column would update the open-turns index (on SQLite) for nothing.
      const query = update.outcome ? endFencedTurnQuery : updateFencedTurnQuery
      const result = await query.execute(this.db as Kysely<TurnchartDatabase>, {
        state: update.state,
        outcome: update.outcome ?? null, // not a parameter of updateFencedTurnQuery
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
      })
      .where('id', '=', id)
      .execute()
  }

  /**
   * Fails (with `TurnOwnershipLostError`) unless `fence.owner` still owns the unfinished turn
   * at `fence.epoch`. Run inside every transaction that writes a running turn's rows; on
   * PostgreSQL the row lock it takes holds off a concurrent claim until the commit.
   */
  async checkFence(id: string, fence: TurnFence): Promise<void> {
    const result = await checkFenceQuery.execute(this.db as Kysely<TurnchartDatabase>, { id, owner: fence.owner, epoch: fence.epoch })
    if (Number(result.numAffectedRows) !== 1) throw new TurnOwnershipLostError(id, fence.owner)
  }

  async getTurn(id: string): Promise<TurnRecord | undefined> {
    const row = await this.db.selectFrom('turnchart_turns').selectAll().where('id', '=', id).executeTakeFirst()
    if (!row) return undefined
    return {
      id: row.id,
      sessionId: row.session_id,
      state: row.state,
      outcome: row.outcome as TurnOutcome | null,
      step: row.step,
      attempt: row.attempt,
      retryAt: row.retry_at === null ? null : num(row.retry_at),
      error: row.error ? (JSON.parse(row.error) as SerializedError) : null,
      time: { created: num(row.created_at), updated: num(row.updated_at) },
      owner: row.owner,
      leaseUntil: row.lease_until === null ? null : num(row.lease_until),
      epoch: num(row.epoch),
      ...(row.options ? { options: JSON.parse(row.options) as TurnRecord['options'] } : {}),
    }
  }

  async appendTransition(record: TransitionRecord): Promise<void> {
    await appendTransitionQuery.execute(this.db as Kysely<TurnchartDatabase>, {
      turn_id: record.turnId,
      seq: record.seq,
      from_state: record.from,
      event_type: record.event,
      payload: JSON.stringify(record.payload),
      to_state: record.to,
      at: record.time,
      parts: record.parts && record.parts.length > 0 ? JSON.stringify(record.parts) : null,
    })
  }

  async transitions(turnId: string): Promise<TransitionRecord[]> {
    const rows = await this.db
      .selectFrom('turnchart_transitions')
      .selectAll()
      .where('turn_id', '=', turnId)
      .orderBy('seq')
      .execute()
    return rows.map((row) => ({
      turnId: row.turn_id,
      seq: row.seq,
      from: row.from_state,
      event: row.event_type,
      to: row.to_state,
      payload: JSON.parse(row.payload) as Record<string, unknown>,
      time: num(row.at),
      ...(row.parts ? { parts: JSON.parse(row.parts) as string[] } : {}),
    }))
  }

  // --- turn ownership and recovery -------------------------------------------------------

  /**
   * Takes the session's write lock for the current transaction (an UPDATE locks the row on
   * PostgreSQL and takes SQLite's write lock), so that two processes cannot both start a turn.
   * Returns false when the session does not exist.
   */
  async lockSession(id: string, now: number): Promise<boolean> {
    const result = await this.db.updateTable('turnchart_sessions').set({ updated_at: now }).where('id', '=', id).executeTakeFirst()
    return Number(result.numUpdatedRows) > 0
  }

  /** The session's unfinished turn, if any (run by this or another engine, or left by a crash). */
  async openTurnOfSession(sessionId: string): Promise<{ id: string; owner: string | null; leaseUntil: number | null } | undefined> {
    const row = await this.db
      .selectFrom('turnchart_turns')
      .select(['id', 'owner', 'lease_until'])
      .where('session_id', '=', sessionId)
      .where('outcome', 'is', null)
      .executeTakeFirst()
    return row && { id: row.id, owner: row.owner, leaseUntil: row.lease_until === null ? null : num(row.lease_until) }
  }

  /** Every turn without an outcome, with its chart input. */
  async openTurns(): Promise<Array<TurnRecord & { input: unknown }>> {
    const rows = await this.db.selectFrom('turnchart_turns').select('id').where('outcome', 'is', null).orderBy('id').execute()
    const out: Array<TurnRecord & { input: unknown }> = []
    for (const { id } of rows) {
      const turn = await this.getTurn(id)
      if (turn) out.push({ ...turn, input: await this.turnInput(id) })
    }
    return out
  }

  async turnInput(id: string): Promise<unknown> {
    const row = await this.db.selectFrom('turnchart_turns').select('input').where('id', '=', id).executeTakeFirst()
    return row ? JSON.parse(row.input) : undefined
  }

  /**
   * Compare-and-set of a turn's owner: succeeds only if the turn is unfinished and still owned
   * by `expectedOwner`, so of two engines recovering the same turn, one wins.
   */
  async claimTurn(id: string, expected: { owner: string | null; epoch: number }, owner: string, leaseUntil: number): Promise<TurnFence | null> {
    let query = this.db
      .updateTable('turnchart_turns')
      .set({ owner, lease_until: leaseUntil, epoch: expected.epoch + 1 })
      .where('id', '=', id)
      .where('outcome', 'is', null)
      .where('epoch', '=', expected.epoch)
    query = expected.owner === null ? query.where('owner', 'is', null) : query.where('owner', '=', expected.owner)
    const result = await query.executeTakeFirst()
    return Number(result.numUpdatedRows) === 1 ? { owner, epoch: expected.epoch + 1 } : null
  }

  /**
   * Extends the leases of the turns `owner` runs (each at its epoch). Returns the ids renewed:
   * a turn missing from it was taken over or released, and its runner must stop.
   */
  async renewLeases(turns: Array<{ id: string; epoch: number }>, owner: string, leaseUntil: number): Promise<Set<string>> {
    if (turns.length === 0) return new Set()
    const rows = await this.db
      .updateTable('turnchart_turns')
      .set({ lease_until: leaseUntil })
      .where('id', 'in', turns.map((t) => t.id))
      .where('owner', '=', owner)
      .where('outcome', 'is', null)
      .returning(['id', 'epoch'])
      .execute()
    const epochs = new Map(turns.map((t) => [t.id, t.epoch]))
    return new Set(rows.filter((row) => epochs.get(row.id) === Number(row.epoch)).map((row) => row.id))
  }

  /** Deletes the transition logs of turns that ended before `before`; messages and parts stay. */
  async deleteFinishedTransitions(before: number): Promise<number> {
    const finished = this.db
      .selectFrom('turnchart_turns')
      .select('id')
      .where('outcome', 'is not', null)
      .where('updated_at', '<', before)
    const result = await this.db.deleteFrom('turnchart_transitions').where('turn_id', 'in', finished).executeTakeFirst()
    return Number(result.numDeletedRows)
  }

  /**
   * Gives up `owner`'s claim on every unfinished turn it holds (a clean close), so another
   * engine takes them at once: the turns it ran, and any it lost track of (a failed final write).
   */
  async releaseTurns(owner: string): Promise<void> {
    await this.db.updateTable('turnchart_turns').set({ owner: null, lease_until: null }).where('owner', '=', owner).where('outcome', 'is', null).execute()
  }
}

// --- the hot writes, compiled once per database (see precompiled-query.ts) -------------------

const upsertMessageQuery = precompiledQuery(['id', 'session_id', 'turn_id', 'role', 'summary', 'created_at', 'data'], (db, v) =>
  db
    .insertInto('turnchart_messages')
    .values(v as never)
    .onConflict((oc) => oc.column('id').doUpdateSet((eb) => ({ data: eb.ref('excluded.data') }))),
)

const appendTransitionQuery = precompiledQuery(
  ['turn_id', 'seq', 'from_state', 'event_type', 'payload', 'to_state', 'at', 'parts'],
  (db, v) => db.insertInto('turnchart_transitions').values(v as never),
)

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
const updateFencedTurnQuery = fencedTurnUpdate(false)
const endFencedTurnQuery = fencedTurnUpdate(true)

function fencedTurnUpdate(withOutcome: boolean) {
  return precompiledQuery([...turnColumns, ...(withOutcome ? (['outcome'] as const) : [])], (db, v) =>
    db
      .updateTable('turnchart_turns')
      .set({
        state: v.state as string,
        ...(withOutcome ? { outcome: v.outcome as string } : {}),
        step: v.step as number,
        attempt: v.attempt as number,
        retry_at: v.retry_at as number | null,
        error: v.error as string | null,
        updated_at: v.updated_at as number,
      })
      .where('id', '=', v.id as string)
      .where('owner', '=', v.owner as string)
      .where('epoch', '=', v.epoch as number),
  )
}

/** Rows per parts statement: one SQL text (and prepared statement) per row count up to it. */
const maxPartsPerStatement = 64
const upsertPartsQueries = new Map<number, ReturnType<typeof buildUpsertParts>>()

function upsertPartsQuery(rows: number): ReturnType<typeof buildUpsertParts> {
  let query = upsertPartsQueries.get(rows)
  if (!query) upsertPartsQueries.set(rows, (query = buildUpsertParts(rows)))
  return query
}

function buildUpsertParts(rows: number) {
  const columns = ['id', 'session', 'message', 'type', 'data', 'at'] as const
  const names = Array.from({ length: rows }, (_, i) => columns.map((c) => `${c}${i}`)).flat()
  return precompiledQuery(names, (db, v) =>
    db
      .insertInto('turnchart_parts')
      .values(
        Array.from({ length: rows }, (_, i) => ({
          id: v[`id${i}`] as string,
          session_id: v[`session${i}`] as string,
          message_id: v[`message${i}`] as string,
          type: v[`type${i}`] as string,
          data: v[`data${i}`] as string,
          updated_at: v[`at${i}`] as number,
        })),
      )
      .onConflict((oc) => oc.column('id').doUpdateSet((eb) => ({ data: eb.ref('excluded.data'), updated_at: eb.ref('excluded.updated_at') }))),
  )
}
