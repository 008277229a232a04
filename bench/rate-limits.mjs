// Rate limits across the fleet (issue 71, item 4): four engines on one PostgreSQL database ask a
// model server that allows LIMIT requests in any minute, counted by arrival; past it, it answers
// 429 with a `retry-after` saying when its window has room (as providers do). Each engine keeps
// its sessions busy, a turn after a turn (one step: a short answer), for SECONDS. Twice, in the
// same run: each turn alone (`circuitBreaker: false`: a `retry-after` holds only the turn that got
// it), without `rateLimits` (the engines learn the limit from the 429s; a `retry-after` holds the
// model for the fleet), and with `rateLimits: { default: { requestsPerMinute: LIMIT } }`.
// Not a test: a measurement, printed as a Markdown table.
//
// Figures, over the phase: requests the server received per minute, of them above its limit
// (answered 429) per minute, turns completed per minute, turns failed, turn time p50 / p99, and
// how many turns entered `throttled`.
//
//   npm run build && node bench/rate-limits.mjs
// Knobs: BENCH_PG_URL (else TURNCHART_PG_URL, else postgres://postgres@127.0.0.1:5432/test; a
// database `bench_rate_<time>` is created there and dropped after), BENCH_RATE_LIMIT (60),
// BENCH_RATE_SECONDS (120), BENCH_RATE_ENGINES (4), BENCH_RATE_SESSIONS (per engine, 4).
import http from 'node:http'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import pg from 'pg'

const here = path.dirname(fileURLToPath(import.meta.url))
const dist = process.env.TURNCHART_DIST ?? path.join(here, '../dist')
const { createEngine } = await import(pathToFileURL(path.join(dist, 'esm', 'index.mjs')).href)
const { createOpenAICompatible } = await import('@ai-sdk/openai-compatible')

const BASE = process.env.BENCH_PG_URL ?? process.env.TURNCHART_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const LIMIT = Number(process.env.BENCH_RATE_LIMIT ?? 60)
const SECONDS = Number(process.env.BENCH_RATE_SECONDS ?? 120)
const ENGINES = Number(process.env.BENCH_RATE_ENGINES ?? 4)
const SESSIONS = Number(process.env.BENCH_RATE_SESSIONS ?? 4)
const minuteMs = 60_000

function urlOf(database) {
  const url = new URL(BASE)
  url.pathname = `/${database}`
  return url.toString()
}
const adminUrl = urlOf(new URL(BASE).pathname.slice(1) || 'postgres')

function pct(values, p) {
  if (values.length === 0) return NaN
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]
}

// ---- the model server: LIMIT requests in any minute by arrival, a 429 with retry-after past it
const server = { accepted: [], answered: 0, refused: 0 }
const modelServer = http.createServer((req, res) => {
  req.resume()
  req.on('end', () => {
    const now = Date.now()
    while (server.accepted.length > 0 && now - server.accepted[0] >= minuteMs) server.accepted.shift()
    if (server.accepted.length >= LIMIT) {
      server.refused++
      const seconds = Math.max(1, Math.ceil((server.accepted[0] + minuteMs - now) / 1000))
      res.writeHead(429, { 'content-type': 'application/json', 'retry-after': String(seconds) })
      return res.end(JSON.stringify({ error: { message: `rate limit: ${LIMIT} requests a minute`, type: 'rate_limit_error' } }))
    }
    server.accepted.push(now)
    server.answered++
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' })
    const send = (choices, extra = {}) => res.write(`data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 0, model: 'm', choices, ...extra })}\n\n`)
    send([{ index: 0, delta: { role: 'assistant', content: 'done' }, finish_reason: null }])
    send([{ index: 0, delta: {}, finish_reason: 'stop' }])
    send([], { usage: { prompt_tokens: 10, completion_tokens: 1, total_tokens: 11 } })
    res.end('data: [DONE]\n\n')
  })
})
await new Promise((r) => modelServer.listen(0, '127.0.0.1', r))
const model = createOpenAICompatible({ name: 'limited', baseURL: `http://127.0.0.1:${modelServer.address().port}/v1`, apiKey: 'k', includeUsage: true })('m')

/** The outcome of a parked turn once some engine ended it (or `failed` with no error at `end`). */
async function outcomeOf(engine, turnId, end) {
  while (Date.now() < end) {
    const turn = await engine.getTurn(turnId).catch(() => undefined)
    if (turn?.outcome) return { outcome: turn.outcome, error: turn.error ?? undefined }
    await new Promise((r) => setTimeout(r, 200))
  }
  return { outcome: 'open at the end' }
}

/** One phase: the fleet on a fresh database, its sessions busy for SECONDS; what the server and the engines saw. */
async function phase(label, options) {
  const dbName = `bench_rate_${Date.now().toString(36)}`
  const admin = new pg.Client({ connectionString: adminUrl })
  await admin.connect()
  await admin.query(`create database "${dbName}"`)
  // (the server's window starts empty: a phase does not inherit the last one's minute)
  await new Promise((r) => setTimeout(r, server.accepted.length ? minuteMs : 0))
  server.accepted = []
  server.answered = 0
  server.refused = 0
  const engines = []
  for (let i = 0; i < ENGINES; i++) engines.push(await createEngine({ database: urlOf(dbName), model, parkAfterMs: 2_000, ...options }))
  const throttled = new Set()
  for (const engine of engines) engine.subscribe((e) => e.type === 'turn.throttled' && throttled.add(e.turnId))
  const times = []
  let completed = 0
  let failed = 0
  const errors = new Map()
  const start = Date.now()
  const end = start + SECONDS * 1000
  const running = new Set()
  const lane = async (engine) => {
    const session = await engine.createSession()
    while (Date.now() < end) {
      const begun = Date.now()
      const turn = engine.prompt(session.id, 'hello')
      running.add(turn)
      let result = await turn.done.catch((error) => ({ outcome: 'failed', error }))
      running.delete(turn)
      // (a throttled turn parks; whichever engine's sweep takes it on finishes it: its outcome is read from the database)
      if (result.error?.name === 'TurnParkedError') result = await outcomeOf(engine, turn.id, end)
      if (Date.now() > end) break
      if (result.outcome === 'completed') {
        completed++
        times.push(Date.now() - begun)
      } else {
        failed++
        const name = result.error?.name ?? result.outcome
        errors.set(name, (errors.get(name) ?? 0) + 1)
      }
    }
  }
  const lanes = engines.flatMap((engine) => Array.from({ length: SESSIONS }, () => lane(engine)))
  await new Promise((r) => setTimeout(r, end - Date.now()))
  const received = server.answered + server.refused
  const refused = server.refused
  const wall = (Date.now() - start) / minuteMs
  for (const turn of running) turn.abort()
  await Promise.all(lanes)
  for (const engine of engines) await engine.close()
  await admin.query(`drop database "${dbName}" with (force)`)
  await admin.end()
  const perMinute = (n) => (n / wall).toFixed(1)
  const why = [...errors].map(([name, n]) => `${n} ${name}`).join(', ')
  return `| ${label} | ${perMinute(received)} | ${perMinute(refused)} | ${perMinute(completed)} | ${failed}${why ? ` (${why})` : ''} | ${(pct(times, 50) / 1000).toFixed(1)} / ${(pct(times, 99) / 1000).toFixed(1)} s | ${throttled.size} |`
}

const rows = [
  await phase('each turn alone (`circuitBreaker: false`: no `rateLimits`, a `retry-after` holds only the turn that got it)', { circuitBreaker: false }),
  await phase('without `rateLimits` (the provider\'s 429s; a `retry-after` holds the model for the fleet)', {}),
  await phase(`\`rateLimits: { default: { requestsPerMinute: ${LIMIT} } }\``, { rateLimits: { default: { requestsPerMinute: LIMIT } } }),
]
modelServer.close()

console.log(`## Rate limits across the fleet

${ENGINES} engines on one PostgreSQL database (a fresh database per phase), ${SESSIONS} sessions each, a one-step turn after a turn for ${SECONDS} s per phase; the model server allows ${LIMIT} requests in any minute by arrival and answers 429 with a \`retry-after\` past it. Load ${os.loadavg()[0].toFixed(2)} at the end. Code: bench/rate-limits.mjs.

| fleet | requests received / min | above the limit (429) / min | turns completed / min | turns failed | turn time p50 / p99 | turns throttled |
|---|---:|---:|---:|---|---:|---:|
${rows.join('\n')}`)
