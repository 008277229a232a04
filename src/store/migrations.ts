/**
 * Migrations defined in code, applied by `migrate()` in one transaction. We run our own
 * small runner instead of Kysely's Migrator because on SQLite the Migrator applies migrations
 * outside a transaction (a failure leaves half a schema) and its lock is a no-op there.
 */
import { sql, type Kysely } from 'kysely'
import type { TurnchartDatabase } from './schema'

export interface Migration {
  name: string
  up(db: Kysely<any>): Promise<void>
}

export const migrations: Migration[] = [
  {
    name: '0001_initial',
    async up(db) {
      await db.schema
        .createTable('turnchart_sessions')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('title', 'text')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .execute()
      await db.schema
        .createTable('turnchart_messages')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('session_id', 'text', (c) => c.notNull().references('turnchart_sessions.id').onDelete('cascade'))
        .addColumn('turn_id', 'text')
        .addColumn('role', 'text', (c) => c.notNull())
        .addColumn('summary', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('data', 'text', (c) => c.notNull())
        .execute()
      await db.schema.createIndex('turnchart_messages_session').on('turnchart_messages').columns(['session_id', 'id']).execute()
      await db.schema
        .createTable('turnchart_parts')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('session_id', 'text', (c) => c.notNull().references('turnchart_sessions.id').onDelete('cascade'))
        .addColumn('message_id', 'text', (c) => c.notNull().references('turnchart_messages.id').onDelete('cascade'))
        .addColumn('type', 'text', (c) => c.notNull())
        .addColumn('data', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .execute()
      await db.schema.createIndex('turnchart_parts_session').on('turnchart_parts').columns(['session_id', 'id']).execute()
      await db.schema.createIndex('turnchart_parts_message').on('turnchart_parts').columns(['message_id', 'id']).execute()
      await db.schema
        .createTable('turnchart_turns')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('session_id', 'text', (c) => c.notNull().references('turnchart_sessions.id').onDelete('cascade'))
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
        .addColumn('turn_id', 'text', (c) => c.notNull().references('turnchart_turns.id').onDelete('cascade'))
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
]

/**
 * Applies the migrations not yet applied, all in one transaction. On SQLite the transaction
 * is `BEGIN IMMEDIATE` on one connection, so two processes opening a new file migrate once.
 *
 * @example
 * await migrate(db) // idempotent
 */
export async function migrate(db: Kysely<TurnchartDatabase>, dialect: 'sqlite' | 'postgres' = 'sqlite'): Promise<string[]> {
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
      await migration.up(conn)
      await conn.insertInto('turnchart_migrations').values({ name: migration.name, applied_at: Date.now() }).execute()
      applied.push(migration.name)
    }
    return applied
  }
  if (dialect === 'postgres') {
    return db.transaction().execute(async (trx) => {
      // One migrator at a time across processes; released at commit.
      await sql`select pg_advisory_xact_lock(hashtext('turnchart_migrations'))`.execute(trx)
      return applyAll(trx)
    })
  }
  return db.connection().execute(async (conn) => {
    await sql`begin immediate`.execute(conn)
    try {
      const applied = await applyAll(conn)
      await sql`commit`.execute(conn)
      return applied
    } catch (error) {
      await sql`rollback`.execute(conn)
      throw error
    }
  })
}
