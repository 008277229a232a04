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
const counts = new Map()
let on = false
const db = new Kysely({ dialect: new SqliteDialect({ database: handle }), log: (e) => { if (on) counts.set(e.query.sql.slice(0, 110), (counts.get(e.query.sql.slice(0, 110)) ?? 0) + 1) } })
const model = createOpenAICompatible({ name: 'bench', baseURL: server.url }).chatModel('m')
const engine = await createEngine({ database: db, model, tools: { [TOOL_NAME]: tool({ description: 'd', inputSchema: jsonSchema({ type: 'object', properties: { n: { type: 'number' } } }), execute: async () => 'x'.repeat(1024) }) } })
for (let i = 0; i < 2; i++) {
  await server.fill('p', turnScript({ steps: 10, deltas: 400 }))
  const session = await engine.createSession()
  on = i === 1
  const r = await engine.prompt(session.id, 'lane:p go').done
  if (r.outcome !== 'completed') throw new Error(JSON.stringify(r))
}
await engine.close(); server.close()
let total = 0
for (const [sql, n] of [...counts].sort((a, b) => b[1] - a[1])) { total += n; console.log(String(n).padStart(4), sql) }
console.log('total', total)
fs.rmSync(dir, { recursive: true, force: true })
