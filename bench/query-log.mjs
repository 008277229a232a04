// One workload-1 turn with every SQL statement logged: which statements a turn runs, how often.
//   node bench/query-log.mjs
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createRequire } from 'node:module'
import { startServer, turnScript } from './lib.mjs'
import { turnchartEntry, TOOL_NAME } from './systems.mjs'

const require = createRequire(new URL('../package.json', import.meta.url))
const { Kysely, SqliteDialect } = require('kysely')
const Database = require('better-sqlite3')
const { createEngine } = await import(turnchartEntry('index.mjs'))
const { createOpenAICompatible } = await import('@ai-sdk/openai-compatible')
const { tool, jsonSchema } = await import('ai')

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'turnchart-qlog-'))
const server = await startServer()
const handle = new Database(path.join(dir, 'q.db'))
handle.pragma('journal_mode = WAL')
handle.pragma('page_size = 4096')
handle.pragma('synchronous = NORMAL')
handle.pragma('foreign_keys = ON')
const counts = new Map()
const timeUs = new Map()
let on = false
const key = (sql) => sql.slice(0, 110)
// Time SQLite's own work: each statement's run/all, and begin/commit.
const statements = new Map()
const timed = {
  prepare(sql) {
    let stmt = statements.get(sql)
    if (stmt) return stmt
    const real = handle.prepare(sql)
    const wrap = (fn) => (...args) => {
      const t0 = process.hrtime.bigint()
      try { return fn.apply(real, args) } finally { if (on) timeUs.set(key(sql), (timeUs.get(key(sql)) ?? 0) + Number(process.hrtime.bigint() - t0) / 1000) }
    }
    stmt = { reader: real.reader, busy: false, all: wrap(real.all), run: wrap(real.run), iterate: real.iterate.bind(real) }
    statements.set(sql, stmt)
    return stmt
  },
  close: () => handle.close(),
}
const db = new Kysely({ dialect: new SqliteDialect({ database: timed }), log: (e) => { if (on) counts.set(key(e.query.sql), (counts.get(key(e.query.sql)) ?? 0) + 1) } })
const model = createOpenAICompatible({ name: 'bench', baseURL: server.url }).chatModel('m')
const engine = await createEngine({ database: db, model, tools: { [TOOL_NAME]: tool({ description: 'd', inputSchema: jsonSchema({ type: 'object', properties: { n: { type: 'number' } } }), execute: async () => 'x'.repeat(1024) }) } })
const turns = Number(process.argv[2] ?? 2)
for (let i = 0; i < turns; i++) {
  await server.fill('p', turnScript({ steps: 10, deltas: 400 }))
  const session = await engine.createSession()
  on = i > 0
  const r = await engine.prompt(session.id, 'lane:p go').done
  if (r.outcome !== 'completed') throw new Error(JSON.stringify(r))
}
await engine.close(); server.close()
let total = 0, totalUs = 0
const per = turns - 1
console.log('per turn: statements, SQLite µs')
for (const [sql, n] of [...counts].sort((a, b) => b[1] - a[1])) {
  total += n; totalUs += timeUs.get(sql) ?? 0
  console.log(String((n / per).toFixed(0)).padStart(4), ((timeUs.get(sql) ?? 0) / per).toFixed(0).padStart(7), sql)
}
console.log('total', (total / per).toFixed(0), 'statements,', (totalUs / per / 1000).toFixed(2), 'ms of SQLite per turn')
fs.rmSync(dir, { recursive: true, force: true })
