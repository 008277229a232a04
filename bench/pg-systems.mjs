// PostgreSQL for the bench: the two systems of workload "pg1" (turnchart on a postgres:// URL,
// LangGraph.js createReactAgent with its PostgreSQL checkpointer), throw-away databases, their
// size, and a count of the statements each database receives (both copies of `pg` wrapped).
import fs from 'node:fs'
import { createRequire } from 'node:module'
import pg from 'pg'
import { aiSdkModel, aiSdkTools, langGraphCalls, turnchartCalls, turnchartEntry, TOOL_NAME, TOOL_RESULT, TOOL_DESCRIPTION } from './systems.mjs'

export { pg }


/** The server to use: BENCH_PG_URL, else the suite's TURNCHART_PG_URL, else the local default. */
export const ADMIN_URL = process.env.BENCH_PG_URL ?? process.env.TURNCHART_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test'

/** The admin URL with another database name. */
export function databaseUrl(name, base = ADMIN_URL) {
  const url = new URL(base)
  url.pathname = `/${name}`
  return url.toString()
}

/** The URL without its password, for the page. */
export function redact(value) {
  const url = new URL(value)
  if (url.password) url.password = '***'
  return url.toString()
}

async function withClient(url, fn) {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 })
  await client.connect()
  try {
    return await fn(client)
  } finally {
    await client.end()
  }
}

/** null when the server answers, otherwise why not. */
export async function unreachable(url = ADMIN_URL) {
  try {
    await withClient(url, (c) => c.query('select 1'))
    return null
  } catch (error) {
    return String(error?.message ?? error)
  }
}

const databaseName = /^[a-z_][a-z0-9_]*$/

/** Drops (if there) and creates an empty database; returns its URL. */
export async function freshDatabase(name) {
  if (!databaseName.test(name)) throw new Error(`bad database name ${name}`)
  await withClient(ADMIN_URL, async (c) => {
    await c.query(`drop database if exists ${name} with (force)`)
    await c.query(`create database ${name}`)
  })
  return databaseUrl(name)
}

export async function dropDatabase(name) {
  if (!databaseName.test(name)) throw new Error(`bad database name ${name}`)
  await withClient(ADMIN_URL, (c) => c.query(`drop database if exists ${name} with (force)`))
}

/**
 * The user tables of a database (each system has a database of its own): bytes on disk per
 * table (pg_total_relation_size: heap, TOAST, indexes, free-space and visibility maps), live
 * rows, and their payload (sum of pg_column_size of the rows).
 */
export async function measurePg(url) {
  return withClient(url, async (c) => {
    const { rows: tables } = await c.query(
      "select c.oid::regclass::text as name, pg_total_relation_size(c.oid) as bytes from pg_class c join pg_namespace n on n.oid = c.relnamespace where c.relkind = 'r' and n.nspname not in ('pg_catalog', 'information_schema') and n.nspname not like 'pg_toast%'",
    )
    const out = { bytes: 0, payload: 0, totalRows: 0, rows: {}, tableBytes: {} }
    for (const t of tables) {
      const { rows } = await c.query(`select count(*)::int as n, coalesce(sum(pg_column_size(t.*)), 0)::bigint as p from ${t.name} t`)
      out.rows[t.name] = rows[0].n
      out.tableBytes[t.name] = Number(t.bytes)
      out.bytes += Number(t.bytes)
      out.payload += Number(rows[0].p)
      out.totalRows += rows[0].n
    }
    return out
  })
}

/**
 * Counts statements per database and kind (begin, commit, insert, update, select, ...), for the
 * bench's `pg` (LangGraph's saver) and the root's (turnchart's dist/): round trips per turn.
 */
export const pgQueries = new Map() // database -> { total, ms, kinds: { kind: n } }
export function instrumentPg() {
  const copies = [pg, createRequire(new URL('../package.json', import.meta.url))('pg')]
  for (const copy of copies) {
    const proto = copy.Client.prototype
    if (proto.__benchCounted) continue
    proto.__benchCounted = true
    const original = proto.query
    proto.query = function counted(config, ...rest) {
      const text = typeof config === 'string' ? config : config?.text
      if (typeof text === 'string') {
        const database = this.connectionParameters?.database ?? '?'
        const count = pgQueries.get(database) ?? { total: 0, ms: 0, kinds: {} }
        const kind = (/^\s*([a-z]+)/i.exec(text)?.[1] ?? '?').toLowerCase()
        count.total += 1
        count.kinds[kind] = (count.kinds[kind] ?? 0) + 1
        pgQueries.set(database, count)
        // Time until the answer (summed: overlapping queries of one database count twice).
        const t0 = performance.now()
        const done = () => (count.ms += performance.now() - t0)
        const last = rest.length - 1
        if (typeof rest[last] === 'function') {
          const callback = rest[last]
          rest[last] = (...args) => (done(), callback(...args))
        } else if (typeof config?.callback === 'function') {
          const callback = config.callback
          config.callback = (...args) => (done(), callback(...args))
        } else {
          const result = original.call(this, config, ...rest)
          result?.then?.(done, done)
          return result
        }
      }
      return original.call(this, config, ...rest)
    }
  }
}
export const snapshotQueries = (database) => structuredClone(pgQueries.get(database) ?? { total: 0, ms: 0, kinds: {} })

/** turnchart, one engine on a postgres:// URL (turnchart's own pool: pg, 10 connections by default). */
export async function turnchartPg({ baseURL, url }) {
  const { createEngine } = await import(turnchartEntry('index.mjs'))
  const engine = await createEngine({ database: url, model: await aiSdkModel(baseURL), tools: await aiSdkTools() })
  return {
    id: 'tc-pg',
    name: 'turnchart, PostgreSQL',
    short: 'turnchart PG',
    kind: 'turnchart',
    url,
    engine,
    ...turnchartCalls(engine),
  }
}

/** LangGraph.js createReactAgent with @langchain/langgraph-checkpoint-postgres (its pool: pg, 10 connections). */
export async function langGraphPg({ baseURL, url }) {
  const { ChatOpenAI } = await import('@langchain/openai')
  const { tool: lcTool } = await import('@langchain/core/tools')
  const { AIMessageChunk } = await import('@langchain/core/messages')
  const { createReactAgent } = await import('@langchain/langgraph/prebuilt')
  const { PostgresSaver } = await import('@langchain/langgraph-checkpoint-postgres')
  const { z } = await import('zod')
  const saver = PostgresSaver.fromConnString(url)
  await saver.setup()
  const llm = new ChatOpenAI({ model: 'scripted', apiKey: 'bench', configuration: { baseURL }, streaming: true, maxRetries: 0 })
  const fetchDoc = lcTool(async () => TOOL_RESULT, { name: TOOL_NAME, description: TOOL_DESCRIPTION, schema: z.object({ n: z.number() }) })
  const agent = createReactAgent({ llm, tools: [fetchDoc], checkpointSaver: saver })
  return {
    id: 'lg-pg',
    name: 'LangGraph.js createReactAgent + PostgreSQL checkpointer',
    short: 'LangGraph+PG',
    kind: 'peer',
    url,
    ...langGraphCalls(agent, AIMessageChunk),
    async close() {
      await saver.end()
    },
  }
}

/** CPU seconds (user + system) of processes from /proc (Linux), 0 elsewhere. */
export function procCpuSeconds(filter) {
  try {
    const tick = 100 // USER_HZ on Linux
    let total = 0
    for (const pid of fs.readdirSync('/proc')) {
      if (!/^\d+$/.test(pid)) continue
      let stat
      try {
        stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8')
      } catch {
        continue
      }
      const close = stat.lastIndexOf(')')
      const comm = stat.slice(stat.indexOf('(') + 1, close)
      if (!filter(Number(pid), comm)) continue
      const fields = stat.slice(close + 2).split(' ')
      total += (Number(fields[11]) + Number(fields[12])) / tick // utime, stime
    }
    return total
  } catch {
    return 0
  }
}
