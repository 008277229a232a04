/**
 * A Kysely instance on this run's test database whose Nth write statement (insert, update,
 * delete) fails inside the engine's own transaction: a real driver, a real rollback.
 */
import Database from 'better-sqlite3'
import { Kysely, PostgresDialect, SqliteDialect, type KyselyPlugin, type PluginTransformQueryArgs, type PluginTransformResultArgs, type QueryResult, type RootOperationNode, type UnknownRow } from 'kysely'
import { pgBaseUrl, testDialect } from './harness'

const writes = new Set(['InsertQueryNode', 'UpdateQueryNode', 'DeleteQueryNode'])

/** Counts write statements once armed, and makes the `failAt`-th one throw. */
export class FailNthWrite implements KyselyPlugin {
  writes = 0
  failed = false
  #armed = false
  #failAt = Infinity

  /** Counts from now; the `failAt`-th write from now fails. */
  arm(failAt: number): void {
    this.#armed = true
    this.#failAt = failAt
    this.writes = 0
  }

  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    if (this.#armed && writes.has(args.node.kind)) {
      this.writes++
      if (this.writes === this.#failAt) {
        this.failed = true
        throw new Error(`injected failure of write statement ${this.writes}`)
      }
    }
    return args.node
  }

  async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    return args.result
  }
}

/** A Kysely instance on `fresh` (a SQLite file, or a PostgreSQL schema) with `plugin`. */
export async function kyselyWith(fresh: { database: string; schema?: string }, plugin: KyselyPlugin): Promise<Kysely<any>> {
  if (testDialect === 'postgres') {
    const pg = await import('pg')
    const pool = new pg.Pool({ connectionString: pgBaseUrl, options: `-c search_path=${fresh.schema}`, max: 4 })
    pool.on('error', () => {})
    return new Kysely({ dialect: new PostgresDialect({ pool }), plugins: [plugin] })
  }
  const handle = new Database(fresh.database)
  handle.pragma('journal_mode = WAL')
  handle.pragma('foreign_keys = ON')
  return new Kysely({ dialect: new SqliteDialect({ database: handle }), plugins: [plugin] })
}
