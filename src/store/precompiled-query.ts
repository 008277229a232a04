/**
 * Queries built and compiled once per database, then run with new values: the repository's
 * hot writes (a turn runs the same few statements hundreds of times, and building and
 * compiling a Kysely query costs more than SQLite's work for it).
 *
 * The query is built with a placeholder for each value; the compiled parameters show where each
 * placeholder went, so a run only puts the values in their places. Built through the database's
 * own executor, so the SQL is its dialect's. A database with plugins (which may rewrite queries
 * or results) always goes through the builder instead. Inside a transaction on an adapter that
 * can run a statement directly (turnchart's own SQLite connection, sqlite/direct-statements.ts),
 * the statement skips Kysely's executor: the transaction holds the connection already.
 */
import { createQueryId, RawNode, type Compilable, type CompiledQuery, type Kysely, type QueryResult } from 'kysely'
import type { TurnchartDatabase } from './schema'

type Values<K extends string> = Record<K, unknown>

interface Template {
  sql: string
  /** For each parameter: the value's name (and its place among the names), or a constant the builder put there itself. */
  slots: Array<{ name: string; index: number } | { constant: unknown }>
  /** The parameters are the values, all of them, in the names' order (a list of values in that order is the parameters as it is). */
  inOrder: boolean
  /** The query's node and id, made once: a run's compiled query shares them (no plugin reads either: a database with plugins never gets here). */
  node: RawNode
  queryId: CompiledQuery['queryId']
  /** The statement run directly, on an adapter that can (prepared once). */
  direct: DirectStatement | undefined
}

const marker = '\u0000turnchart-value:'

/** A statement that runs on its connection now (synchronously, as SQLite does), with the given parameters. */
export type DirectStatement = (parameters: readonly unknown[]) => QueryResult<unknown>

/** An adapter that runs a query on its connection now: `directStatement(sql)` prepares it once, its runs reuse it. */
export interface DirectAdapter {
  directStatement(sql: string): DirectStatement
}

const isDirect = (adapter: object): adapter is DirectAdapter => typeof (adapter as Partial<DirectAdapter>).directStatement === 'function'

/**
 * A query of fixed shape with named values.
 *
 * @example
 * const touch = precompiledQuery(['id', 'at'], (db, v) => db.updateTable('turnchart_sessions').set({ updated_at: v.at }).where('id', '=', v.id))
 * await touch.execute(db, { id: 'ses_1', at: Date.now() })
 */
export function precompiledQuery<K extends string>(
  names: readonly K[],
  build: (db: Kysely<TurnchartDatabase>, values: Values<K>) => Compilable,
): {
  execute(db: Kysely<TurnchartDatabase>, values: Values<K>): Promise<QueryResult<unknown>>
  /** The same with the values listed in the order of `names`: no object keyed by name (a statement of many rows has many names). */
  executeInOrder(db: Kysely<TurnchartDatabase>, values: readonly unknown[]): Promise<QueryResult<unknown>>
} {
  // One template per adapter: each Kysely instance (and its transactions) has its own.
  const templates = new WeakMap<object, Template>()
  const templateOf = (db: Kysely<TurnchartDatabase>) => {
    const executor = db.getExecutor()
    let template = templates.get(executor.adapter)
    if (!template) {
      template = compileTemplate(db, names, build, isDirect(executor.adapter) ? executor.adapter : undefined)
      templates.set(executor.adapter, template)
    }
    return template
  }
  return {
    execute(db, values) {
      if (db.getExecutor().plugins.length > 0) return db.executeQuery(build(db, values).compile())
      const template = templateOf(db)
      return run(db, template, template.slots.map((slot) => ('name' in slot ? values[slot.name as K] : slot.constant)))
    },
    executeInOrder(db, values) {
      if (db.getExecutor().plugins.length > 0) return db.executeQuery(build(db, Object.fromEntries(names.map((name, i) => [name, values[i]])) as Values<K>).compile())
      const template = templateOf(db)
      return run(db, template, template.inOrder ? values : template.slots.map((slot) => ('index' in slot ? values[slot.index] : slot.constant)))
    },
  }
}

/** Runs the template with its parameters: directly inside a transaction on an adapter that can, else through Kysely's executor. */
function run(db: Kysely<TurnchartDatabase>, template: Template, parameters: readonly unknown[]): Promise<QueryResult<unknown>> {
  if (db.isTransaction && template.direct) {
    try {
      return Promise.resolve(template.direct(parameters))
    } catch (error) {
      return Promise.reject(error)
    }
  }
  const query: CompiledQuery = { sql: template.sql, query: template.node, parameters, queryId: template.queryId }
  return db.executeQuery(query)
}

function compileTemplate<K extends string>(
  db: Kysely<TurnchartDatabase>,
  names: readonly K[],
  build: (db: Kysely<TurnchartDatabase>, values: Values<K>) => Compilable,
  direct: DirectAdapter | undefined,
): Template {
  const placeholders = Object.fromEntries(names.map((name) => [name, marker + name])) as Values<K>
  const compiled = build(db, placeholders).compile()
  const indexOf = new Map(names.map((name, index) => [name as string, index]))
  const slots = compiled.parameters.map((parameter) => {
    const name = typeof parameter === 'string' && parameter.startsWith(marker) ? parameter.slice(marker.length) : undefined
    return name !== undefined && indexOf.has(name) ? { name, index: indexOf.get(name)! } : { constant: parameter }
  })
  // A placeholder the builder transformed or dropped would leave a value out: refuse.
  const used = new Set(slots.flatMap((slot) => ('name' in slot ? [slot.name] : [])))
  const missing = names.filter((name) => !used.has(name))
  if (missing.length > 0) throw new Error(`precompiled query: the values ${missing.join(', ')} are not among its parameters`)
  const inOrder = slots.length === names.length && slots.every((slot, i) => 'index' in slot && slot.index === i)
  return { sql: compiled.sql, slots, inOrder, node: RawNode.createWithSql(compiled.sql), queryId: createQueryId(), direct: direct?.directStatement(compiled.sql) }
}
