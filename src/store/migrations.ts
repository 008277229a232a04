/**
 * Migrations defined in code, applied by `migrate()` in one transaction. We run our own
 * small runner instead of Kysely's Migrator because on SQLite the Migrator applies migrations
 * outside a transaction (a failure leaves half a schema) and its lock is a no-op there.
 */
import { sql, type Kysely } from 'kysely'
import type { SqlDialect } from './backend'
import type { TurnchartDatabase } from './schema'

export interface Migration {
  name: string
  /** Runs inside the migration transaction; `dialect` for the few types and statements that differ (backend.ts). */
  up(db: Kysely<any>, dialect: SqlDialect): Promise<void>
}

export const migrations: Migration[] = [
  {
    name: '0001_initial',
    async up(db, dialect) {
      const id = dialect.idType
      await db.schema
        .createTable('turnchart_sessions')
        .addColumn('id', id, (c) => c.primaryKey())
        .addColumn('title', 'text')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .execute()
      await db.schema
        .createTable('turnchart_messages')
        .addColumn('id', id, (c) => c.primaryKey())
        .addColumn('session_id', id, (c) => c.notNull().references('turnchart_sessions.id').onDelete('cascade'))
        .addColumn('turn_id', id)
        .addColumn('role', 'text', (c) => c.notNull())
        .addColumn('summary', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('data', 'text', (c) => c.notNull())
        .execute()
      await db.schema.createIndex('turnchart_messages_session').on('turnchart_messages').columns(['session_id', 'id']).execute()
      await db.schema
        .createTable('turnchart_parts')
        .addColumn('id', id, (c) => c.primaryKey())
        .addColumn('session_id', id, (c) => c.notNull().references('turnchart_sessions.id').onDelete('cascade'))
        .addColumn('message_id', id, (c) => c.notNull().references('turnchart_messages.id').onDelete('cascade'))
        .addColumn('type', 'text', (c) => c.notNull())
        .addColumn('data', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .execute()
      await db.schema.createIndex('turnchart_parts_session').on('turnchart_parts').columns(['session_id', 'id']).execute()
      await db.schema.createIndex('turnchart_parts_message').on('turnchart_parts').columns(['message_id', 'id']).execute()
      await db.schema
        .createTable('turnchart_turns')
        .addColumn('id', id, (c) => c.primaryKey())
        .addColumn('session_id', id, (c) => c.notNull().references('turnchart_sessions.id').onDelete('cascade'))
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('outcome', 'text')
        .addColumn('step', 'integer', (c) => c.notNull())
        .addColumn('attempt', 'integer', (c) => c.notNull())
        .addColumn('retry_at', 'bigint')
        .addColumn('error', 'text')
        .addColumn('input', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .execute()
      await db.schema.createIndex('turnchart_turns_session').on('turnchart_turns').columns(['session_id', 'id']).execute()
      await db.schema.createIndex('turnchart_turns_open').on('turnchart_turns').columns(['outcome', 'state']).execute()
      await db.schema
        .createTable('turnchart_transitions')
        .addColumn('turn_id', id, (c) => c.notNull().references('turnchart_turns.id').onDelete('cascade'))
        .addColumn('seq', 'integer', (c) => c.notNull())
        .addColumn('from_state', 'text', (c) => c.notNull())
        .addColumn('event_type', 'text', (c) => c.notNull())
        .addColumn('payload', 'text', (c) => c.notNull())
        .addColumn('to_state', 'text', (c) => c.notNull())
        .addColumn('at', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('turnchart_transitions_pk', ['turn_id', 'seq'])
        .execute()
    },
  },
  {
    name: '0002_leases_and_touched_parts',
    async up(db) {
      await db.schema.alterTable('turnchart_turns').addColumn('owner', 'text').execute()
      await db.schema.alterTable('turnchart_turns').addColumn('lease_until', 'bigint').execute()
      await db.schema.alterTable('turnchart_transitions').addColumn('parts', 'text').execute()
    },
  },
  {
    // Parts are read by session (turnchart_parts_session); the by-message index only cost space.
    name: '0003_drop_parts_by_message_index',
    async up(db) {
      await db.schema.dropIndex('turnchart_parts_message').ifExists().execute()
    },
  },
  {
    // The fencing token: recovery increments it when it claims a turn, and every write of a
    // running turn is conditional on (owner, epoch), so a stalled engine cannot write after a takeover.
    name: '0004_turn_epoch',
    async up(db) {
      await db.schema.alterTable('turnchart_turns').addColumn('epoch', 'integer', (c) => c.notNull().defaultTo(0)).execute()
    },
  },
  {
    // Approve, deny and abort from any engine: stored here, applied by the engine running the turn.
    name: '0005_control_requests',
    async up(db, dialect) {
      const id = dialect.idType
      await db.schema
        .createTable('turnchart_controls')
        .addColumn('id', id, (c) => c.primaryKey())
        .addColumn('turn_id', id, (c) => c.notNull().references('turnchart_turns.id').onDelete('cascade'))
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('call_id', 'text')
        .addColumn('reason', 'text')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('handled_at', 'bigint')
        .addColumn('result', 'text')
        .execute()
      await db.schema.createIndex('turnchart_controls_pending').on('turnchart_controls').columns(['handled_at', 'turn_id']).execute()
    },
  },
  {
    // Session defaults and revert marker; a turn's call options (to resume it with the same
    // model, tools and settings) and its usage totals (kept when reverted messages are deleted).
    name: '0006_conversation',
    async up(db, dialect) {
      const id = dialect.idType
      // Prompts waiting for their session to be idle (`whenBusy: 'enqueue'`); the id is the turn's to be.
      await db.schema
        .createTable('turnchart_queue')
        .addColumn('id', id, (c) => c.primaryKey())
        .addColumn('session_id', id, (c) => c.notNull().references('turnchart_sessions.id').onDelete('cascade'))
        .addColumn('input', 'text', (c) => c.notNull())
        .addColumn('options', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute()
      await db.schema.createIndex('turnchart_queue_session').on('turnchart_queue').columns(['session_id', 'id']).execute()
      await db.schema.alterTable('turnchart_sessions').addColumn('defaults', 'text').execute()
      await db.schema.alterTable('turnchart_sessions').addColumn('reverted_to', 'text').execute()
      await db.schema.alterTable('turnchart_turns').addColumn('options', 'text').execute()
      await db.schema.alterTable('turnchart_turns').addColumn('usage', 'text').execute()
    },
  },
  {
    // Every transition sets a turn's state, and an index on (outcome, state) moved an entry each
    // time. Only open turns are looked up by outcome: a partial index of their ids is written
    // when a turn starts and when it ends, not per transition.
    name: '0007_open_turns_index',
    async up(db) {
      await db.schema.dropIndex('turnchart_turns_open').execute()
      await db.schema.createIndex('turnchart_turns_open').on('turnchart_turns').column('id').where(sql.ref('outcome'), 'is', null).execute()
    },
  },
  {
    // The app's metadata of a session (an owner id for the chat handler's `authorize`, say): JSON text.
    name: '0008_session_metadata',
    async up(db) {
      await db.schema.alterTable('turnchart_sessions').addColumn('metadata', 'text').execute()
    },
  },
  {
    // Steering: a queued message is either a prompt (waits for the session to be idle) or a
    // steer (the running turn takes it at its next model call). An approval from another engine
    // may carry an edited input.
    name: '0009_steering_and_edited_approvals',
    async up(db) {
      await db.schema.alterTable('turnchart_queue').addColumn('kind', 'text', (c) => c.notNull().defaultTo('prompt')).execute()
      await db.schema.alterTable('turnchart_controls').addColumn('input', 'text').execute()
    },
  },
  {
    // PostgreSQL pushes what other engines wait for (LISTEN/NOTIFY): triggers that notify in the
    // writing transaction, and the sessions watched from elsewhere (postgres/notify-triggers.ts).
    // A dialect without notifications (SQLite) creates nothing: its engines poll.
    name: '0010_postgres_notifications',
    async up(db, dialect) {
      await dialect.createNotifyTriggers?.(db)
    },
  },
  {
    // Run trees: a child session names its parent session; a child turn its parent turn, the
    // parent's tool call that started it (one child per call: the unique index is what makes a
    // call resumed after a crash find its child rather than start a second), and its tree's root.
    name: '0011_run_trees',
    async up(db, dialect) {
      const id = dialect.idType
      await db.schema.alterTable('turnchart_sessions').addColumn('parent_id', id).execute()
      await db.schema.createIndex('turnchart_sessions_parent').on('turnchart_sessions').columns(['parent_id', 'id']).where(sql.ref('parent_id'), 'is not', null).execute()
      await db.schema.alterTable('turnchart_turns').addColumn('parent_turn_id', id).execute()
      await db.schema.alterTable('turnchart_turns').addColumn('parent_call_id', 'text').execute()
      await db.schema.alterTable('turnchart_turns').addColumn('root_turn_id', id).execute()
      await db.schema
        .createIndex('turnchart_turns_parent_call')
        .unique()
        .on('turnchart_turns')
        .columns(['parent_turn_id', 'parent_call_id'])
        .where(sql.ref('parent_turn_id'), 'is not', null)
        .execute()
    },
  },
  {
    // Approval receipts: who decided a call another engine runs travels with the stored request.
    name: '0012_approval_receipts',
    async up(db) {
      await db.schema.alterTable('turnchart_controls').addColumn('decided_by', 'text').execute()
    },
  },
  {
    // A handoff (`close({ handoff: true })`): a turn released by its owner notifies the other
    // engines (`r:<turnId>`), so one takes it at once instead of at its next recovery sweep.
    name: '0013_notify_released_turns',
    async up(db, dialect) {
      await dialect.notifyReleasedTurns?.(db)
    },
  },
  {
    // One budget across engines: a run tree's spending, added to by every engine that runs a
    // part of it, in the transactions that write its turns' rows; it goes with its root turn.
    name: '0014_tree_spending',
    async up(db, dialect) {
      await db.schema
        .createTable('turnchart_tree_spending')
        .addColumn('root_turn_id', dialect.idType, (c) => c.primaryKey().references('turnchart_turns.id').onDelete('cascade'))
        .addColumn('input_tokens', 'bigint', (c) => c.notNull())
        .addColumn('output_tokens', 'bigint', (c) => c.notNull())
        .addColumn('cost', 'double precision', (c) => c.notNull())
        .addColumn('steps', 'integer', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .execute()
    },
  },
  {
    // Tenants: the session's tenant (`createSession({ tenant })`), read by tenant (its usage).
    name: '0015_session_tenant',
    async up(db) {
      await db.schema.alterTable('turnchart_sessions').addColumn('tenant', 'text').execute()
      await db.schema.createIndex('turnchart_sessions_tenant').on('turnchart_sessions').columns(['tenant', 'id']).where(sql.ref('tenant'), 'is not', null).execute()
    },
  },
  {
    // Tenants' concurrency: one row whose update every turn start that checks the limits makes
    // first, so that two engines' starts count one after the other (a row lock on PostgreSQL).
    name: '0016_concurrency_slots',
    async up(db) {
      await db.schema
        .createTable('turnchart_slots')
        .addColumn('id', 'integer', (c) => c.primaryKey())
        .addColumn('starts', 'bigint', (c) => c.notNull())
        .execute()
      await db.insertInto('turnchart_slots').values({ id: 1, starts: 0 }).execute()
    },
  },
  {
    // Forks at a step (`engine.forkTurn`): the turn and step the session's history came from.
    name: '0017_session_forked_from',
    async up(db) {
      await db.schema.alterTable('turnchart_sessions').addColumn('forked_from', 'text').execute()
    },
  },
  {
    // Fair dequeue across engines: the tenant whose turn took a slot last, written by the start
    // that takes it (under the starts' lock), read by every engine's round robin.
    name: '0018_slots_last_tenant',
    async up(db) {
      await db.schema.alterTable('turnchart_slots').addColumn('last_tenant', 'text').execute()
    },
  },
  {
    // The outages a turn's writes waited out, on the row written after them (turnchart show, the viewer).
    name: '0019_transition_storage_waits',
    async up(db) {
      await db.schema.alterTable('turnchart_transitions').addColumn('storage_waits', 'text').execute()
    },
  },
  {
    // The log stored once, by its key: a commit writes one page of it, not two (SqlDialect.transitionsByKey).
    name: '0020_transitions_by_key',
    async up(db, dialect) {
      await dialect.transitionsByKey?.(db)
    },
  },
  {
    // Schedules (`engine.schedule`): each starts a turn on its session at its occurrences; the
    // transaction that queues an occurrence's turn moves `next_at` on (of two engines, one does).
    name: '0021_schedules',
    async up(db, dialect) {
      const id = dialect.idType
      await db.schema
        .createTable('turnchart_schedules')
        .addColumn('id', id, (c) => c.primaryKey())
        .addColumn('session_id', id, (c) => c.notNull().references('turnchart_sessions.id').onDelete('cascade'))
        .addColumn('input', 'text', (c) => c.notNull())
        .addColumn('options', 'text', (c) => c.notNull())
        .addColumn('rule', 'text', (c) => c.notNull())
        .addColumn('catch_up', 'text', (c) => c.notNull())
        .addColumn('next_at', 'bigint')
        .addColumn('last_at', 'bigint')
        .addColumn('last_turn_id', id)
        .addColumn('missed', 'integer', (c) => c.notNull())
        .addColumn('paused', 'integer', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute()
      await db.schema.createIndex('turnchart_schedules_next').on('turnchart_schedules').columns(['next_at']).execute()
      await db.schema.createIndex('turnchart_schedules_session').on('turnchart_schedules').columns(['session_id']).execute()
      // A queued prompt an occurrence queued names it: its turn stores which (`options.schedule`).
      await db.schema.alterTable('turnchart_queue').addColumn('schedule', 'text').execute()
    },
  },
  {
    // Models' circuits (`circuitBreaker`): a row per model that failed, shared by every engine.
    name: '0022_circuits',
    async up(db) {
      await db.schema
        .createTable('turnchart_circuits')
        .addColumn('model', 'text', (c) => c.primaryKey())
        .addColumn('failures', 'integer', (c) => c.notNull())
        .addColumn('since', 'bigint', (c) => c.notNull())
        .addColumn('open_until', 'bigint')
        .addColumn('probe_until', 'bigint')
        .addColumn('held_until', 'bigint')
        .addColumn('admitted', 'text', (c) => c.notNull().defaultTo('[]'))
        .addColumn('version', 'integer', (c) => c.notNull())
        .execute()
    },
  },
  {
    // The engines read a model's circuit before each request only when it may have changed: on
    // PostgreSQL, when their listener heard it did (`m:<model>`).
    name: '0023_notify_circuits',
    async up(db, dialect) {
      await dialect.notifyCircuits?.(db)
    },
  },
]

/**
 * Applies the migrations not yet applied, all in one transaction that the dialect makes
 * exclusive across processes (`SqlDialect.migrateExclusively`: two processes opening a new
 * database migrate once).
 *
 * @example
 * await migrate(opened.db, opened.sql) // idempotent
 */
export async function migrate(db: Kysely<TurnchartDatabase>, dialect: SqlDialect): Promise<string[]> {
  const applyAll = async (conn: Kysely<TurnchartDatabase>): Promise<string[]> => {
    await conn.schema
      .createTable('turnchart_migrations')
      .ifNotExists()
      .addColumn('name', 'text', (c) => c.primaryKey())
      .addColumn('applied_at', 'bigint', (c) => c.notNull())
      .execute()
    const done = new Set((await conn.selectFrom('turnchart_migrations').select('name').execute()).map((r) => r.name))
    const applied: string[] = []
    for (const migration of migrations) {
      if (done.has(migration.name)) continue
      await migration.up(conn, dialect)
      await conn.insertInto('turnchart_migrations').values({ name: migration.name, applied_at: Date.now() }).execute()
      applied.push(migration.name)
    }
    return applied
  }
  if (await allApplied(db)) return [] // no write lock when there is nothing to do
  return dialect.migrateExclusively(db, applyAll)
}

/** True when the migration table exists and lists every migration (a read, no lock). */
async function allApplied(db: Kysely<TurnchartDatabase>): Promise<boolean> {
  try {
    const rows = await db.selectFrom('turnchart_migrations').select('name').execute()
    const done = new Set(rows.map((r) => r.name))
    return migrations.every((m) => done.has(m.name))
  } catch {
    return false // no migration table yet
  }
}
