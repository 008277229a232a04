import { sql, type Kysely } from 'kysely'

/**
 * The schema turnchart's tables are in, as the store's connections see it (the channel is
 * named after it; notify-triggers.ts names it the same way at the migration).
 *
 * @example
 * const schema = await storeSchema(db)
 */
export async function storeSchema(db: Kysely<any>): Promise<string> {
  const { rows } = await sql<{ schema: string | null }>`select current_schema() as schema`.execute(db)
  if (!rows[0]?.schema) throw new Error('the PostgreSQL connection has no current schema (search_path names none that exists)')
  return rows[0].schema
}
